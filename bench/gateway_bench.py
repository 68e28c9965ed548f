"""Model gateway overhead: per-call latency of the real openai SDK against the offline simulator
(latency 0), direct and through the gateway, non-streaming chat with a small body.

Run:  .venv/bin/python bench/gateway_bench.py [--calls 400]

Both paths use one SDK client each (keep-alive), the gateway with its call log on (as in use).
Calls alternate between the two paths in blocks of 20, so drift on a shared machine hits both
alike. Both hops set TCP_NODELAY (the gateway's handler, and http.client upstream): with Nagle
on, a response sent as headers then body waits ~40 ms for the peer's delayed ACK.
Target: median overhead <= 2 ms. A report, not a test: it always exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import openai
from report import save

from flashrsi_dagster.gateway import Gateway, Upstream
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


def measure(calls: int) -> dict:
    with (
        OfflineModelServer(ServerConfig()) as simulator,
        tempfile.TemporaryDirectory() as tmp,
        Gateway(log_path=Path(tmp) / "gateway.jsonl") as gateway,
    ):
        upstream = Upstream(simulator.url, "chat", "sk-bench-not-a-real-key-0000000000")
        token = gateway.grant(experiment="bench", role="target", run_id="r1", upstream=upstream)
        direct = openai.OpenAI(base_url=simulator.url, api_key="k", max_retries=0)
        through = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=token, max_retries=0)
        _timed(direct, BLOCK), _timed(through, BLOCK)  # warm-up: connections, imports
        times: dict[str, list[float]] = {"direct": [], "gateway": []}
        for _ in range(-(-calls // BLOCK)):
            times["direct"] += _timed(direct, BLOCK)
            times["gateway"] += _timed(through, BLOCK)
        assert gateway.usage().calls == len(times["gateway"]) + BLOCK
    report = {name: _summary(t) for name, t in times.items()}
    overhead = report["gateway"]["median_ms"] - report["direct"]["median_ms"]
    return {
        "calls_each": len(times["direct"]),
        **report,
        "overhead_median_ms": round(overhead, 3),
        "overhead_p90_ms": round(report["gateway"]["p90_ms"] - report["direct"]["p90_ms"], 3),
        "target_ms": TARGET_MS,
        "pass": overhead <= TARGET_MS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args(argv)
    r = measure(args.calls)
    print(f"model gateway: {r['calls_each']} non-streaming chat calls each way (openai SDK)")
    for name in ("direct", "gateway"):
        print(f"  {name:8} median {r[name]['median_ms']:.3f} ms   p90 {r[name]['p90_ms']:.3f} ms")
    print(
        f"overhead: median {r['overhead_median_ms']:.3f} ms, p90 {r['overhead_p90_ms']:.3f} ms"
        f"   target <= {TARGET_MS} ms   {'PASS' if r['pass'] else 'MISS'}"
    )
    save("gateway_bench", r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
