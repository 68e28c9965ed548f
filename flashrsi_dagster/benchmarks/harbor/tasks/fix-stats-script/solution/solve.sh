#!/bin/bash
# True division for the mean; sort, and average the middle pair, for the median.
set -euo pipefail
python3 - <<'EOF'
from pathlib import Path

path = Path("/app/stats.py")
text = path.read_text()
text = text.replace("sum(values) // len(values)", "sum(values) / len(values)")
text = text.replace(
    "    middle = len(values) // 2\n    return values[middle]\n",
    "    ordered = sorted(values)\n"
    "    middle = len(ordered) // 2\n"
    "    if len(ordered) % 2:\n"
    "        return ordered[middle]\n"
    "    return (ordered[middle - 1] + ordered[middle]) / 2\n",
)
path.write_text(text)
EOF
