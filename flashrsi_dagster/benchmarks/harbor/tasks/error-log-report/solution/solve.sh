#!/bin/bash
# Count 5xx responses per IP; order by IP octets, then (stable) by count.
set -euo pipefail
awk '$9 ~ /^5[0-9][0-9]$/ { n[$1]++ } END { for (ip in n) print ip, n[ip] }' \
    /app/logs/access.log |
    sort -t. -k1,1n -k2,2n -k3,3n -k4,4n |
    sort -s -t' ' -k2,2nr |
    head -n 3 |
    awk '{ print $2, $1 }' > /app/report.txt
