"""One gateway in a process of its own, as a candidate's run process has: it serves one run of
role `worker` in experiment `x` on the given call log, and makes that run's model calls.

    python gateway_process.py '{"log": ..., "upstream": ..., "max_tokens": ..., "calls": ...}'

`upstream`: the base URL of the run's upstream; `max_tokens`: the role's token cap (absent:
none); `calls`: how many model calls to make, or "until capped" (calls refused only because
other calls are in flight are tried again; a refusal that says the cap is reached ends it).
Prints `ready` once the gateway serves, waits for a line on stdin, makes its calls, prints the
HTTP statuses as one JSON list, and exits.
"""

from __future__ import annotations

import http.client
import json
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from flashrsi_dagster.gateway import Caps, Gateway, Upstream

BODY = json.dumps(
    {
        "model": "simulator/echo",
        "messages": [{"role": "user", "content": "hello there"}],
        "max_tokens": 3,
    }
)
MAX_CALLS = 10_000


def _call(connection: http.client.HTTPConnection, token: str) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    connection.request("POST", "/v1/chat/completions", BODY, headers)
    response = connection.getresponse()
    return response.status, response.read().decode()


def main(spec: dict) -> list[int]:
    with Gateway(log_path=Path(spec["log"])) as gateway:
        if "max_tokens" in spec:
            gateway.set_caps("x", "worker", Caps(max_tokens=spec["max_tokens"]))
        upstream = Upstream(spec["upstream"], "chat", "sk-process-key-0000000000000000")
        token = gateway.grant(experiment="x", role="worker", run_id="r1", upstream=upstream)
        connection = http.client.HTTPConnection(urlsplit(gateway.url).netloc, timeout=60)
        print("ready", flush=True)
        sys.stdin.readline()
        statuses: list[int] = []
        for _ in range(MAX_CALLS if spec["calls"] == "until capped" else spec["calls"]):
            status, text = _call(connection, token)
            if status == 402 and "with calls in flight" in text:
                time.sleep(0.001)
                continue
            statuses.append(status)
            if status == 402:
                break
        return statuses


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))), flush=True)
