#!/bin/bash
# Revert the bad commit by its message, keeping every other commit.
set -euo pipefail
cd /app/repo
bad=$(git log --format=%H --grep='^Turn on debug mode$' main)
git revert --no-edit "$bad"
