import os
import subprocess
import sys
import tempfile

CASES = [
    ("3\n1\n2\n", "mean=2.00 median=2.00"),
    ("10\n4\n\n1\n7\n", "mean=5.50 median=5.50"),
    ("2.5\n-1\n", "mean=0.75 median=0.75"),
    ("9\n", "mean=9.00 median=9.00"),
    ("5\n1\n4\n1\n", "mean=2.75 median=2.50"),
]
for text, expected in CASES:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as handle:
        handle.write(text)
    result = subprocess.run(
        ["python3", "/app/stats.py", handle.name], capture_output=True, text=True
    )
    os.unlink(handle.name)
    if result.stdout.strip() != expected:
        sys.exit(
            f"input {text!r}: expected {expected!r}, got {result.stdout.strip()!r} {result.stderr}"
        )
print("stats.py is correct")
