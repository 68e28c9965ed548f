#!/bin/bash
# Stage the wanted files under release/, then archive that folder.
set -euo pipefail
stage=$(mktemp -d)
mkdir "$stage/release"
cd /app/build
find . -path ./tmp -prune -o -type f ! -name '*.log' -print0 |
    xargs -0 cp --parents -t "$stage/release"
tar -czf /app/release.tar.gz -C "$stage" release
rm -rf "$stage"
