import os
import stat
import sys

CONTENTS = {
    "/app/bin/start.sh": "#!/bin/sh\necho starting\n",
    "/app/bin/stop.sh": "#!/bin/sh\necho stopping\n",
    "/app/config/secret.env": "API_TOKEN=not-a-real-token\n",
    "/app/public/index.html": "<h1>Hello</h1>\n",
    "/app/public/css/site.css": "body { margin: 0; }\n",
}
MODES = {
    "/app/bin/start.sh": 0o755,
    "/app/bin/stop.sh": 0o755,
    "/app/config/secret.env": 0o600,
    "/app/public": 0o755,
    "/app/public/css": 0o755,
    "/app/public/index.html": 0o644,
    "/app/public/css/site.css": 0o644,
}
for path, text in CONTENTS.items():
    with open(path) as handle:
        if handle.read() != text:
            sys.exit(f"{path} was modified")
for path, mode in MODES.items():
    actual = stat.S_IMODE(os.stat(path).st_mode)
    if actual != mode:
        sys.exit(f"{path}: mode {actual:o}, expected {mode:o}")
print("permissions are right")
