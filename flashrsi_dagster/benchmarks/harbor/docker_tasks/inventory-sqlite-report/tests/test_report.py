import csv
import sys

EXPECTED = [
    ["city", "skus", "units", "value_eur"],
    ["Lyon", "3", "26", "659.70"],
    ["Graz", "2", "8", "140.68"],
    ["Porto", "3", "45", "44.10"],
]
try:
    with open("/app/report.csv", newline="") as handle:
        got = [row for row in csv.reader(handle) if row]
except OSError as exc:
    sys.exit(f"no report: {exc}")
if got != EXPECTED:
    sys.exit(f"report.csv: got {got}, expected {EXPECTED}")
print("report ok")
