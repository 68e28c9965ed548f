import sys

EXPECTED = "6 172.16.4.2\n5 10.0.0.9\n3 10.0.0.12\n"
try:
    with open("/app/report.txt") as handle:
        report = handle.read()
except OSError as exc:
    sys.exit(f"cannot read /app/report.txt: {exc}")
if report.strip().splitlines() != EXPECTED.strip().splitlines():
    sys.exit(f"expected {EXPECTED!r}, got {report!r}")
print("report.txt is right")
