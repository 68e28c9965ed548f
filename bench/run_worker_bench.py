"""How long a run worker takes to start: Dagster's cold `spawn` against the warm fork.

Run:  .venv/bin/python bench/run_worker_bench.py [--runs 5]

A home's queue (`deployment/queued.py`, the path `flashrsi run` takes for queued steps and the
one the daemon takes for runs launched from the UI) launches `--runs` runs one after another,
each into a run worker of the code server: first Dagster's own server (`dagster api grpc`,
each worker a `spawn`ed Python that imports the code location), then ours
(`deployment/code_server.py`, each worker forked from a process that imported it once). A
worker's start is the time from the run's launch (`RUN_STARTING`, written by the launcher) to
its start (`RUN_START`, written by the worker once its job is reconstructed), read from the
run's own events. The first warm run also pays for the fork server's start; the median is the
figure. A report, not a test: it always exits 0. On a shared machine the figures move with
the load: repeat them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg
from report import save

from flashrsi_dagster.deployment import code_server, queued
from flashrsi_dagster.deployment.definitions import build_definitions
from flashrsi_dagster.deployment.instance import persistent_instance
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.orchestration.dagster_internals import DagsterEventType

WARM = code_server.command
COLD = [sys.executable, "-m", "dagster", "api", "grpc"]
"""Dagster's own command line: its server spawns every worker cold."""


def _events_at(instance: dg.DagsterInstance, run_id: str) -> dict[DagsterEventType, float]:
    records = instance.all_logs(run_id)
    return {r.dagster_event.event_type: r.timestamp for r in records if r.dagster_event}


def _finished(instance: dg.DagsterInstance, run_id: str, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        if run is not None and run.is_finished:
            return
        time.sleep(0.2)
    raise RuntimeError(f"run {run_id} did not finish in {timeout} s")


def measure(runs: int, warm: bool) -> list[float]:
    """Each run's worker start, in seconds, on a fresh home's queue."""
    command = WARM if warm else (lambda *options: [*COLD, *options])
    code_server.command = command  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / ".flashrsi"
        instance = persistent_instance(home)
        defs = defs_for("meta_harness")
        instance.add_dynamic_partitions(defs.partitions.experiments.name, ["exp"])
        queue = queued.QueuedRuns(instance, home, build_definitions(str(home)))
        starts = []
        try:
            for _ in range(runs):
                request = dg.RunRequest(
                    job_name=defs.finalize_job.name,
                    partition_key="exp",
                    tags={EXPERIMENT_TAG: "exp"},
                )
                run_id = queue.submit(request)
                _finished(instance, run_id)
                at = _events_at(instance, run_id)
                starts.append(at[DagsterEventType.RUN_START] - at[DagsterEventType.RUN_STARTING])
        finally:
            queue.close()
    return starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    figures = {}
    for name, warm in (("cold", False), ("warm", True)):
        starts = measure(args.runs, warm)
        figures[name] = {
            "starts_s": [round(s, 2) for s in starts],
            "median_s": statistics.median(starts),
        }
        each = ", ".join(f"{s:.2f}" for s in starts)
        print(f"{name}: median {figures[name]['median_s']:.2f} s  ({each})")
    saved = figures["cold"]["median_s"] - figures["warm"]["median_s"]
    print(f"saved per run worker start: {saved:.2f} s at the median")
    save("run_worker", {"runs": args.runs, **figures, "saved_s": saved})


if __name__ == "__main__":
    main()
