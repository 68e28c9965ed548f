"""Model gateway overhead: per-call latency of the real openai SDK against the offline simulator
(latency 0), direct and through the gateway, non-streaming chat with a small body.

Run:  .venv/bin/python bench/gateway_bench.py [--calls 400] [--others 7]

Three paths, one SDK client each (keep-alive), the gateway with its call log on (as in use):
direct; through the gateway for a role without caps; and for a role with a token cap, which
each call checks against every gateway on the log (`gateway/shared.py`): `--others` gateways
in processes of their own share the log, as the candidates of a round side by side do, each
with a reservation file (after one call) that the capped path reads and probes on every call.
Calls alternate between the paths in blocks of 20, so drift on a shared machine hits all
alike. Both hops set TCP_NODELAY (the gateway's handler, and http.client upstream): with Nagle
on, a response sent as headers then body waits ~40 ms for the peer's delayed ACK.
Target: median overhead <= 2 ms. A report, not a test: it always exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import openai
from report import save

from flashrsi_dagster.gateway import Caps, Gateway, Upstream
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig

TARGET_MS = 2.0
BLOCK = 20
MESSAGES = [{"role": "user", "content": "classify: the quick brown fox"}]


def _timed(client: openai.OpenAI, n: int) -> list[float]:
    times = []
    for _ in range(n):
        clock = time.perf_counter()
        client.chat.completions.create(model="simulator/echo", messages=MESSAGES)
        times.append((time.perf_counter() - clock) * 1000)
    return times


def _summary(times: list[float]) -> dict:
    ordered = sorted(times)
    return {
        "median_ms": round(statistics.median(ordered), 3),
        "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 3),
    }


KEY = "sk-bench-not-a-real-key-0000000000"
OTHER = """
import json, sys
from pathlib import Path
import openai
from flashrsi_dagster.gateway import Caps, Gateway, Upstream
log, url = sys.argv[1], sys.argv[2]
with Gateway(log_path=Path(log)) as gateway:
    gateway.set_caps("bench", "capped", Caps(max_tokens=10**12))
    upstream = Upstream(url, "chat", "KEY")
    token = gateway.grant(experiment="bench", role="capped", run_id="other", upstream=upstream)
    client = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=token, max_retries=0)
    client.chat.completions.create(model="simulator/echo", messages=json.loads(sys.argv[3]))
    print("ready", flush=True)
    sys.stdin.readline()
""".replace("KEY", KEY)


@contextlib.contextmanager
def _other_gateways(n: int, log: Path, url: str) -> Iterator[None]:
    """`n` gateway processes on `log`, each after one call of the capped role, idle."""
    argv = [sys.executable, "-c", OTHER, str(log), url, json.dumps(MESSAGES)]
    others = [
        subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(n)
    ]
    try:
        for other in others:
            assert other.stdout is not None and other.stdout.readline().strip() == "ready"
        yield
    finally:
        for other in others:
            other.communicate("go\n", timeout=30)


def measure(calls: int, others: int) -> dict:
    with (
        OfflineModelServer(ServerConfig()) as simulator,
        tempfile.TemporaryDirectory() as tmp,
        Gateway(log_path=Path(tmp) / "gateway.jsonl") as gateway,
        _other_gateways(others, Path(tmp) / "gateway.jsonl", simulator.url),
    ):
        upstream = Upstream(simulator.url, "chat", KEY)
        gateway.set_caps("bench", "capped", Caps(max_tokens=10**12))
        clients = {"direct": openai.OpenAI(base_url=simulator.url, api_key="k", max_retries=0)}
        for path, role in (("gateway", "target"), ("capped", "capped")):
            token = gateway.grant(experiment="bench", role=role, run_id=path, upstream=upstream)
            clients[path] = openai.OpenAI(
                base_url=f"{gateway.url}/v1", api_key=token, max_retries=0
            )
        for client in clients.values():  # warm-up: connections, imports
            _timed(client, BLOCK)
        times: dict[str, list[float]] = {path: [] for path in clients}
        for _ in range(-(-calls // BLOCK)):
            for path, client in clients.items():
                times[path] += _timed(client, BLOCK)
        assert gateway.usage().calls == 2 * (len(times["gateway"]) + BLOCK)
    report = {path: _summary(t) for path, t in times.items()}
    overhead = {
        path: (
            round(report[path]["median_ms"] - report["direct"]["median_ms"], 3),
            round(report[path]["p90_ms"] - report["direct"]["p90_ms"], 3),
        )
        for path in ("gateway", "capped")
    }
    return {
        "calls_each": len(times["direct"]),
        "other_gateways": others,
        **report,
        "overhead_median_ms": overhead["gateway"][0],
        "overhead_p90_ms": overhead["gateway"][1],
        "capped_overhead_median_ms": overhead["capped"][0],
        "capped_overhead_p90_ms": overhead["capped"][1],
        "target_ms": TARGET_MS,
        "pass": max(overhead["gateway"][0], overhead["capped"][0]) <= TARGET_MS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--others", type=int, default=7, help="gateway processes on the log")
    args = parser.parse_args(argv)
    r = measure(args.calls, args.others)
    print(
        f"model gateway: {r['calls_each']} non-streaming chat calls each way (openai SDK), "
        f"{r['other_gateways']} other gateway processes on the log"
    )
    for name in ("direct", "gateway", "capped"):
        print(f"  {name:8} median {r[name]['median_ms']:.3f} ms   p90 {r[name]['p90_ms']:.3f} ms")
    for name, key in (("overhead", "overhead"), ("capped", "capped_overhead")):
        print(
            f"{name}: median {r[f'{key}_median_ms']:.3f} ms, p90 {r[f'{key}_p90_ms']:.3f} ms"
            f"   target <= {TARGET_MS} ms"
        )
    print("PASS" if r["pass"] else "MISS")
    save("gateway_bench", r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
