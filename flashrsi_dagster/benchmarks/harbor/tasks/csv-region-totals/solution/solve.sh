#!/bin/bash
# Group the amounts by normalised region and write the totals, largest first.
set -euo pipefail
python3 - <<'EOF'
import csv
from decimal import Decimal

totals = {}
with open("/app/data/sales.csv", newline="") as handle:
    for row in csv.DictReader(handle):
        region = row["region"].strip().lower()
        totals[region] = totals.get(region, Decimal(0)) + Decimal(row["amount"])
with open("/app/summary.csv", "w", newline="") as handle:
    writer = csv.writer(handle)
    writer.writerow(["region", "total"])
    for region, total in sorted(totals.items(), key=lambda item: -item[1]):
        writer.writerow([region, f"{total:.2f}"])
EOF
