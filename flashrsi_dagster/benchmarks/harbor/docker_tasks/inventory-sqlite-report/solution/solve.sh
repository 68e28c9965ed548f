#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
import sqlite3

rows = sqlite3.connect("/app/data/inventory.db").execute(
    "SELECT w.city, COUNT(DISTINCT s.sku), SUM(s.quantity), SUM(s.quantity * s.unit_price_cents) "
    "FROM warehouses w JOIN stock s ON s.warehouse_id = w.id WHERE s.quantity > 0 "
    "GROUP BY w.id ORDER BY 4 DESC"
).fetchall()
with open("/app/report.csv", "w", newline="") as handle:
    out = csv.writer(handle)
    out.writerow(["city", "skus", "units", "value_eur"])
    for city, skus, units, cents in rows:
        out.writerow([city, skus, units, f"{cents / 100:.2f}"])
PY
