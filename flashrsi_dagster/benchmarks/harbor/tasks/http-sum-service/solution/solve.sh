#!/bin/bash
# Write the server, start it detached from this script, and wait until it answers.
set -euo pipefail
cat > /app/server.py <<'EOF'
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/health":
            self.reply(200, "text/plain", "ok")
        elif url.path == "/sum":
            query = parse_qs(url.query)
            total = int(query["a"][0]) + int(query["b"][0])
            self.reply(200, "application/json", json.dumps({"sum": total}))
        else:
            self.reply(404, "text/plain", "not found")

    def reply(self, status, content_type, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


ThreadingHTTPServer(("127.0.0.1", 8765), Handler).serve_forever()
EOF
nohup python3 /app/server.py > /tmp/server.log 2>&1 &
for _ in $(seq 50); do
    if curl -fsS http://127.0.0.1:8765/health > /dev/null 2>&1; then exit 0; fi
    sleep 0.1
done
echo "the server did not come up" >&2
exit 1
