import csv
import sys

EXPECTED = [
    ("west", "250.00"),
    ("south", "200.00"),
    ("north", "140.00"),
    ("east", "100.00"),
]

try:
    with open("/app/summary.csv", newline="") as handle:
        rows = list(csv.reader(handle))
except OSError as exc:
    sys.exit(f"cannot read /app/summary.csv: {exc}")
if not rows or rows[0] != ["region", "total"]:
    sys.exit(f"bad header: {rows[:1]}")
got = [tuple(cell.strip() for cell in row) for row in rows[1:] if row]
if got != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {got}")
print("summary.csv is correct")
