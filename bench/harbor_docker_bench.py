"""Per-trial time of a Harbor task in the local environment against Harbor's docker environment
(`docker-offline`), the oracle agent, one trial at a time.

Run:  .venv/bin/python bench/harbor_docker_bench.py [--repeats 3] [--tasks a,b,...]

Each task runs once untimed in each environment first (Docker builds its image then, and keeps
it by content), then `--repeats` times, alternating environments. Reported per environment:
the median trial wall time and its parts from Harbor's own timing (environment set-up, agent,
verifier; the rest is Harbor's and the environment's tear-down), and whether every reward was
1.0. Docker needs an engine (`DOCKER_HOST`), the Compose v2 plugin (`make docker`) and the
suites' base images (`python -m flashrsi_dagster.images.task_bases`); the local environment
needs root. A report, not a test: it always exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harbor.models.trial.config import EnvironmentConfig
from report import save

from flashrsi_dagster.benchmarks.harbor.suite import (
    TASKS_DIR,
    builtin_task_dirs,
    local_environment,
    reward,
    run_trial,
)
from flashrsi_dagster.environments.harbor_docker import OFFLINE_DOCKER_IMPORT_PATH

ENVIRONMENTS = {
    "local": local_environment(),
    "docker": EnvironmentConfig(import_path=OFFLINE_DOCKER_IMPORT_PATH),
}
PARTS = ("environment_setup", "agent_execution", "verifier")


def trial(task: Path, environment: EnvironmentConfig) -> dict[str, float]:
    """One oracle trial: its wall time, Harbor's timing of its parts, and its reward."""
    with tempfile.TemporaryDirectory() as tmp:
        clock = time.perf_counter()
        result = asyncio.run(
            run_trial(task, trials_dir=Path(tmp), agent="oracle", environment=environment)
        )
        wall = time.perf_counter() - clock
    timing = {"wall": wall, "reward": reward(result) or 0.0}
    for part in PARTS:
        info = getattr(result, part)
        if info and info.started_at and info.finished_at:
            timing[part] = (info.finished_at - info.started_at).total_seconds()
    return timing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", help="comma-separated task ids (default: the 11 built-in)")
    args = parser.parse_args(argv)
    tasks = builtin_task_dirs()
    if args.tasks:
        tasks = [TASKS_DIR / name for name in args.tasks.split(",")]
    first = {
        name: [trial(task, env)["wall"] for task in tasks] for name, env in ENVIRONMENTS.items()
    }
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in ENVIRONMENTS}
    for _ in range(args.repeats):
        for task in tasks:
            for name, environment in ENVIRONMENTS.items():
                samples[name].append(trial(task, environment))
    report = {"tasks": [t.name for t in tasks], "repeats": args.repeats, "environments": {}}
    print(f"{len(tasks)} Harbor tasks x {args.repeats}, oracle agent, one trial at a time")
    for name, rows in samples.items():
        summary = {
            "first_pass_median_s": round(statistics.median(first[name]), 2),
            "median_s": round(statistics.median(r["wall"] for r in rows), 2),
            **{
                f"{p}_median_s": round(statistics.median(r.get(p, 0) for r in rows), 2)
                for p in PARTS
            },
            "all_solved": all(r["reward"] == 1.0 for r in rows),
        }
        report["environments"][name] = summary
        print(f"{name:>7}: " + "  ".join(f"{k} {v}" for k, v in summary.items()))
    local, docker = (report["environments"][n]["median_s"] for n in ("local", "docker"))
    report["docker_over_local"] = round(docker / local, 2)
    print(f"docker / local per trial: {report['docker_over_local']}x")
    save("harbor_docker_bench", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
