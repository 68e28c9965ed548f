#!/bin/bash
# Count active users and collect the active admins' normalised addresses.
set -euo pipefail
python3 - <<'EOF'
import json

with open("/app/users.json") as handle:
    users = json.load(handle)
active = [user for user in users if user["active"] is True]
emails = sorted({user["email"].lower() for user in active if "admin" in user["roles"]})
report = {"active": len(active), "inactive": len(users) - len(active), "admin_emails": emails}
with open("/app/report.json", "w") as handle:
    json.dump(report, handle, indent=2)
EOF
