"""Candidates per hour with a round's candidates run side by side, at 1, 4 and 8 concurrent runs.

Run:  .venv/bin/python bench/parallel_bench.py [--latency 10] [--tasks 2] [--levels 1,4,8]

For each level N, a fresh home whose run queue allows N runs at once (`RunLimits`: in total, per
experiment and per endpoint) runs the demo experiment (`examples/meta_harness.yaml`: MiniAgent
target and Worker) with one round of `candidates_per_round` candidates (2 at level 1, else 8)
as `flashrsi run` does (`drive_on`): the seed in-process, then the round's candidates submitted
at once to the run queue, each a run of its own in a run worker the queue launches, then the
promotion. Every model request waits `--latency` seconds at a simulator server of our own.

- round_s: from the first candidate's run created to the last one's end (the queue's waits,
  the run workers' starts and the runs);
- per_hour: candidates per hour over that span, 3600 x candidates / round_s;
- ideal: N x the rate at level 1 (N candidates at a time, each as long as one alone);
- speedup: per_hour / per_hour at level 1. Target: at 8 concurrent runs >= 6.

A report, not a test: it always exits 0. On a shared machine the figures move with the load.
Each level's figures are written (`bench/out/parallel.json`) as soon as it is measured; each
level's home is removed after its driver has stopped its code server and run workers, with
retries for a writer still letting go of a file.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DAGSTER_GRPC_TIMEOUT_SECONDS", "300")  # as `flashrsi run` sets it

from dagster import DagsterEventType
from report import save

from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.cli_driver import drive_on
from flashrsi_dagster.deployment.instance import instance_dir, persistent_instance
from flashrsi_dagster.deployment.run_queue import RunLimits
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "meta_harness.yaml"
TARGET_SPEEDUP = 6.0


def measure(level: int, latency: float, tasks: int) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="flashrsi-parallel-"))
    before = os.getloadavg()[0]
    try:
        with OfflineModelServer(ServerConfig(latency_ms=latency * 1000)) as server:
            figures = _measure(level, latency, tasks, server, tmp / ".flashrsi")
    finally:
        _remove(tmp)
    # the machine's 1-minute load average as the level began and ended: the figures move with it
    return {**figures, "load_before": round(before, 2), "load_after": round(os.getloadavg()[0], 2)}


def _remove(folder: Path, attempts: int = 20) -> None:
    """Remove `folder` whole; a file written meanwhile (a process still letting go of the
    instance's files) gets another try, then it is left with a warning."""
    for _ in range(attempts):
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            return
        time.sleep(0.5)
    print(f"warning: could not remove {folder} entirely")


def _measure(level: int, latency: float, tasks: int, server, home: Path) -> dict:
    candidates = 2 if level == 1 else 8
    instance_dir(
        home, RunLimits(max_concurrent_runs=level, per_experiment=level, per_endpoint=level)
    )
    overrides = [
        *("--experiment.home", str(home), "--benchmark.limit", str(tasks)),
        *("--algorithm.max_steps", "1", "--algorithm.candidates_per_round", str(candidates)),
        *("--agent.llm.base_url", server.url, "--algorithm.worker.llm.base_url", server.url),
    ]
    experiment = open_experiment(load_config(EXAMPLE, overrides))
    instance = persistent_instance(home)
    started = time.monotonic()
    try:
        drive_on(instance, experiment, say=lambda line: print(f"  [{level}] {line}"))
        records = instance.get_run_records()
        phases = _phases(instance, [r for r in records if _round(r) == "1"])
    finally:
        instance.dispose()
    total = time.monotonic() - started
    round_1 = [r for r in records if _round(r) == "1"]
    assert len(round_1) == candidates, [r.dagster_run.tags for r in records]
    first = min(r.create_timestamp.timestamp() for r in round_1)
    span = max(r.end_time for r in round_1) - first
    runs = sorted(r.end_time - r.start_time for r in round_1)
    waits = sorted(r.start_time - r.create_timestamp.timestamp() for r in round_1)
    return {
        "level": level,
        "candidates": candidates,
        "round_s": round(span, 1),
        "per_hour": round(3600 * candidates / span, 1),
        "run_s_median": round(runs[len(runs) // 2], 1),
        "queue_and_worker_start_s": [round(w, 1) for w in waits],
        "phases_median_s": phases,
        "experiment_s": round(total, 1),
        "model_calls": len(server.requests),
    }


def _round(record) -> str | None:
    return record.dagster_run.tags.get("flashrsi/round")


# Where a run's start goes, each phase from the run's creation: the queue's wait and the
# launch (to starting), the run worker's spawn and import (to started), the first step.
PHASES = {
    "starting": DagsterEventType.RUN_STARTING,
    "started": DagsterEventType.RUN_START,
    "first_step": DagsterEventType.STEP_START,
}


def _phases(instance, records) -> dict[str, float]:
    """The median time from a run's creation to each of `PHASES`' first events."""
    at: dict[str, list[float]] = {name: [] for name in PHASES}
    for record in records:
        created = record.create_timestamp.timestamp()
        logs = instance.all_logs(record.dagster_run.run_id)
        for name, kind in PHASES.items():
            times = [e.timestamp for e in logs if e.dagster_event_type == kind]
            if times:
                at[name].append(min(times) - created)
    return {name: round(sorted(t)[len(t) // 2], 1) for name, t in at.items() if t}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=10.0, help="seconds per model request")
    parser.add_argument("--tasks", type=int, default=2, help="dev tasks per candidate")
    parser.add_argument("--levels", default="1,4,8", help="concurrent runs, comma-separated")
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]
    print(f"model latency {args.latency:g} s, {args.tasks} dev tasks, levels {levels}")
    rows: list[dict] = []
    for level in levels:
        rows.append(measure(level, args.latency, args.tasks))
        verdict = _compare(rows)
        save(  # after every level: a later level's failure loses nothing measured
            "parallel",
            {"latency_s": args.latency, "tasks": args.tasks, "levels": rows, "pass": verdict},
        )
        print(rows[-1])
    top = next((r for r in rows if r["level"] == 8), None)
    print(
        f"8 concurrent vs 1: {top and top.get('speedup')}x (target >= {TARGET_SPEEDUP:g}): "
        f"{'PASS' if verdict else 'MISS' if verdict is not None else 'n/a'}"
    )


def _compare(rows: list[dict]) -> bool | None:
    """Each row's speedup over level 1; whether level 8 reached the target (None: not run)."""
    base = next((r for r in rows if r["level"] == 1), None)
    for row in rows:
        if base is not None:
            row["ideal_per_hour"] = round(base["per_hour"] * row["level"], 1)
            row["speedup"] = round(row["per_hour"] / base["per_hour"], 2)
    top = next((r for r in rows if r["level"] == 8), None)
    return None if top is None or base is None else top["speedup"] >= TARGET_SPEEDUP


if __name__ == "__main__":
    main()
