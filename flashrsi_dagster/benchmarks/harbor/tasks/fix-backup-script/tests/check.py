import os
import subprocess
import sys
import tempfile

base = tempfile.mkdtemp(prefix="backup check ")
source = os.path.join(base, "my notes")
dest = os.path.join(base, "backup dir", "nested")
os.makedirs(os.path.join(source, "sub folder"))
files = {
    "plain.txt": "one\n",
    "with space.txt": "two\n",
    "  leading.txt": "three\n",
    "skip.md": "not copied\n",
    "archive.txt.gz": "not copied\n",
    "sub folder/inner.txt": "not copied\n",
}
for name, text in files.items():
    with open(os.path.join(source, name), "w") as handle:
        handle.write(text)

for attempt in (1, 2):  # a second run must work too, over existing copies
    result = subprocess.run(
        ["bash", "/app/backup.sh", source, dest], capture_output=True, text=True
    )
    if result.returncode != 0:
        sys.exit(f"run {attempt}: exit code {result.returncode}: {result.stderr}")

expected = {"plain.txt", "with space.txt", "  leading.txt"}
if not os.path.isdir(dest):
    sys.exit("DEST was not created")
got = set(os.listdir(dest))
if got != expected:
    sys.exit(f"expected {sorted(expected)} in DEST, got {sorted(got)}")
for name in expected:
    with open(os.path.join(dest, name)) as handle:
        if handle.read() != files[name]:
            sys.exit(f"{name} was not copied intact")
print("backup.sh works")
