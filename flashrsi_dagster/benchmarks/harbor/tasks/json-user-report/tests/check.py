import json
import sys

EXPECTED = {
    "active": 6,
    "inactive": 2,
    "admin_emails": ["ada@example.com", "dora@example.com"],
}
try:
    with open("/app/report.json") as handle:
        report = json.load(handle)
except (OSError, ValueError) as exc:
    sys.exit(f"cannot read /app/report.json: {exc}")
if report != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {report}")
print("report.json is correct")
