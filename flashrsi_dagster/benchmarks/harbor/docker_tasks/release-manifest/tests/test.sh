#!/bin/bash
# Reward in reward.txt: the archive's files, and the manifest's checksums of them.
if python3 -I /tests/check.py; then reward=1; else reward=0; fi
echo "$reward" > /logs/verifier/reward.txt
