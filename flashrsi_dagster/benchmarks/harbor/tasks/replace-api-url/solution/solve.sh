#!/bin/bash
# Replace the URL in .py files outside vendor/, never touching the /v10 service.
set -euo pipefail
find /app/src -path /app/src/vendor -prune -o -type f -name '*.py' -print0 |
    xargs -0 sed -i -E 's#http://old-api\.internal/v1([^0-9]|$)#https://api.example.com/v2\1#g'
