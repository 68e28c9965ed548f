"""The built-in Harbor tasks through our engine vs Harbor's own Job, both with the oracle agent
and the local environment, 8 trials at a time.

Run:  .venv/bin/python bench/harbor_bench.py [--repeats 3]

Ours: `run_rollouts` with the `harbor-oracle` target on the `terminal_bench` benchmark
(concurrency 8, each rollout one Harbor Trial). Harbor: `Job` with `n_concurrent_trials=8`.
Both solve every task (reward 1.0) or the report says so. Target: ours / Harbor <= 1.0.
A report, not a test: it always exits 0. Needs root (the local environment).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from report import save

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.benchmarks.harbor.benchmark import TerminalBench
from flashrsi_dagster.benchmarks.harbor.suite import time_builtin_suite
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.records import RecordStore, Redactor
from flashrsi_dagster.rollouts.engine import Settings, run_rollouts
from flashrsi_dagster.rollouts.record import RolloutRecord

TARGET_RATIO = 1.0


def ours(folder: Path) -> tuple[float, list[float]]:
    bench = TerminalBench()
    role = RoleConfig.model_validate({"type": "harbor-oracle", "llm": {"model": "none"}})
    agent = target_agent(role)
    clock = time.perf_counter()
    final = run_rollouts(
        bench,
        agent,
        bench.tasks(),
        RolloutRecord(folder / "r.jsonl", RecordStore(folder, Redactor())),
        split="dev",
        settings=Settings(concurrency=8),
    )
    return time.perf_counter() - clock, [t.score or 0.0 for t in final]


def harbors(folder: Path) -> tuple[float, list[float]]:
    timing = asyncio.run(time_builtin_suite(folder))
    return timing.wall_sec, [r or 0.0 for r in timing.rewards.values()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    walls: dict[str, list[float]] = {"ours": [], "harbor": []}
    solved: dict[str, bool] = {"ours": True, "harbor": True}
    for _ in range(args.repeats):  # alternate, so both see the same machine state
        for name, run in (("ours", ours), ("harbor", harbors)):
            with tempfile.TemporaryDirectory() as tmp:
                wall, scores = run(Path(tmp))
            walls[name].append(wall)
            solved[name] &= len(scores) == 11 and all(s == 1.0 for s in scores)
    ratio = statistics.median(walls["ours"]) / statistics.median(walls["harbor"])
    report = {
        "walls_s": walls,
        "all_solved": solved,
        "ratio": round(ratio, 3),
        "target_ratio": TARGET_RATIO,
        "pass": ratio <= TARGET_RATIO,
    }
    print("built-in Harbor suite (11 tasks), oracle agent, local environment, 8 at a time")
    for name in walls:
        print(
            f"{name:>7}: median {statistics.median(walls[name]):6.2f} s  samples "
            f"{[round(w, 2) for w in walls[name]]}  every reward 1.0: {solved[name]}"
        )
    print(
        f"ratio ours/harbor {ratio:.3f}   target <= {TARGET_RATIO}   "
        f"{'PASS' if report['pass'] else 'MISS'}"
    )
    save("harbor_bench", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
