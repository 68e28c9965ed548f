#!/bin/bash
# Reward 1 only when every check in check.py passes; its messages land in test-stdout.txt.
if python3 -I /tests/check.py; then reward=1; else reward=0; fi
echo "$reward" > /logs/verifier/reward.txt
