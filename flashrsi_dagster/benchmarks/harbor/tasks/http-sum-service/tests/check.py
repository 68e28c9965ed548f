import json
import sys
import urllib.error
import urllib.request

BASE = "http://127.0.0.1:8765"


def get(path):
    try:
        with urllib.request.urlopen(BASE + path, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError as exc:
        sys.exit(f"GET {path}: no server: {exc}")


status, body = get("/health")
if (status, body.strip()) != (200, "ok"):
    sys.exit(f"/health answered {status} {body!r}")
for a, b in ((2, 3), (-7, 100), (0, 0)):
    status, body = get(f"/sum?a={a}&b={b}")
    if status != 200 or json.loads(body or "null") != {"sum": a + b}:
        sys.exit(f"/sum?a={a}&b={b} answered {status} {body!r}")
if get("/missing")[0] != 404:
    sys.exit("/missing did not answer 404")
print("the service answers correctly")
