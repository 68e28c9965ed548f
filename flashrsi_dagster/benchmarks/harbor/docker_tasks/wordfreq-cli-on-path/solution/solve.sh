#!/bin/bash
set -euo pipefail
cat > /root/.local/bin/wordfreq <<'PY'
#!/opt/tools/bin/python
import argparse
import collections
import re

parser = argparse.ArgumentParser()
parser.add_argument("-n", type=int, default=3)
parser.add_argument("files", nargs="+")
options = parser.parse_args()
counts = collections.Counter()
for name in options.files:
    with open(name, encoding="utf-8") as handle:
        counts.update(re.findall(r"[a-z]+", handle.read().lower()))
for word, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[: options.n]:
    print(word, count)
PY
chmod +x /root/.local/bin/wordfreq
