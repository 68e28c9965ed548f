"""Rollout engine throughput: 32 tasks at concurrency 8 against the ideal schedule.

Run:  .venv/bin/python bench/rollout_bench.py [--latency-ms 1000] [--tasks 32] [--concurrency 8]

The target is MiniAgent on the offline simulator with a fixed latency per model call, on the
built-in text-classification tasks (one model call each). The per-task time is measured alone
(median of a few sequential rollouts); the ideal wall time for N tasks at concurrency C is
ceil(N / C) x that. Target: ratio <= 1.15. A report, not a test: it always exits 0.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

from report import save

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.benchmarks.text_classification import TextClassification
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.environments.confinement import Confinement
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import RecordStore, Redactor
from flashrsi_dagster.rollouts.engine import Settings, run_rollouts
from flashrsi_dagster.rollouts.record import RolloutRecord

TARGET_RATIO = 1.15


def _timed_batch(agent, bench, tasks, folder: Path, name: str, concurrency: int) -> float:
    record = RolloutRecord(folder / f"{name}.jsonl", RecordStore(folder, Redactor()))
    clock = time.perf_counter()
    run_rollouts(
        bench, agent, tasks, record, split="dev", settings=Settings(concurrency=concurrency)
    )
    return time.perf_counter() - clock


def measure(latency_ms: float, n_tasks: int, concurrency: int, jailed: bool = True) -> dict:
    bench = TextClassification()
    tasks = bench.tasks()[:n_tasks]
    with (
        OfflineModelServer(ServerConfig(latency_ms=latency_ms)) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        role = RoleConfig.model_validate(
            {
                "type": "miniagent",
                "llm": {"model": "simulator/target", "base_url": server.url, "max_retries": 0},
            }
        )
        confinement = Confinement(jailed=jailed, experiment="rollout-bench")
        with target_agent(role, HARNESS, confinement=confinement) as agent:
            _timed_batch(agent, bench, tasks[:2], Path(tmp), "warm-up", 1)
            singles = [
                _timed_batch(agent, bench, [t], Path(tmp), f"single-{i}", 1)
                for i, t in enumerate(tasks[2:7])
            ]
            wall = _timed_batch(agent, bench, tasks, Path(tmp), "batch", concurrency)
    per_task = statistics.median(singles)
    ideal = math.ceil(n_tasks / concurrency) * per_task
    return {
        "confinement": "bwrap" if jailed else "none",
        "latency_ms": latency_ms,
        "tasks": n_tasks,
        "concurrency": concurrency,
        "per_task_s": round(per_task, 3),
        "ideal_s": round(ideal, 3),
        "wall_s": round(wall, 3),
        "ratio": round(wall / ideal, 3),
        "target_ratio": TARGET_RATIO,
        "pass": wall / ideal <= TARGET_RATIO,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=1000)
    parser.add_argument("--tasks", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--confinement", choices=("bwrap", "none"), default="bwrap", help="jailed runs or not"
    )
    args = parser.parse_args(argv)
    r = measure(args.latency_ms, args.tasks, args.concurrency, args.confinement == "bwrap")
    print(
        f"rollout engine: {r['tasks']} tasks, concurrency {r['concurrency']}, model latency "
        f"{r['latency_ms']:.0f} ms (MiniAgent on the offline simulator, confinement "
        f"{r['confinement']})"
    )
    print(
        f"per task alone {r['per_task_s']:.3f} s; ideal ceil(N/C) x per task = "
        f"{r['ideal_s']:.3f} s; measured {r['wall_s']:.3f} s"
    )
    print(f"ratio {r['ratio']:.3f}   target <= {TARGET_RATIO}   {'PASS' if r['pass'] else 'MISS'}")
    save("rollout_bench", r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
