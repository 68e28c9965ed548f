#!/bin/bash
# Reward in reward.json: the report's rows, and the database left as it was built.
cd /tests
report=0; database=0
python3 -I test_report.py && report=1
python3 -I -c "import sqlite3,sys; n=sqlite3.connect('/app/data/inventory.db').execute('select count(*) from stock').fetchone()[0]; sys.exit(n != 11)" && database=1
reward=$(( report * database ))
printf '{"reward": %d, "report": %d, "database_unchanged": %d}\n' "$reward" "$report" "$database" > /logs/verifier/reward.json
