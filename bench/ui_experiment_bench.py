"""A whole experiment started from the UI against the same experiment run by the CLI.

Run:  .venv/bin/python bench/ui_experiment_bench.py [--algorithms meta_harness modular_rsi evolver]

For each algorithm, its example cut down to a few minutes (`SMALL`) runs twice, back to back,
each in a fresh home: `flashrsi run` (timed from the command's start to its exit), then as a
researcher runs it from the UI — `flashrsi ui` (`dagster_ui.py`), the round driver sensor on,
the `start_experiment` job launched with the same file and overrides (GraphQL, as the
Launchpad's button), timed from that launch until the experiment is finished (its next step is
an end and no run of it is active). The UI's own start-up is not counted: it happens once per
day, not per experiment. Target (issue 26): the UI's time at most 1.5x the CLI's, for each
algorithm. A report, not a test: it always exits 0. On a shared machine the figures move with
the load: repeat them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg
from dagster_ui import DagsterUI
from report import OUT, save

from flashrsi_dagster.deployment.instance import persistent_instance
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.orchestration.ready import ACTIVE
from flashrsi_dagster.orchestration.resources import ExperimentsResource

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SMALL = {  # the demos, each cut to a few minutes on 2 cores
    "meta_harness": ("--algorithm.max_steps", "2", "--benchmark.limit", "9"),
    "modular_rsi": ("--benchmark.limit", "9"),
    "evolver": (
        *("--benchmark.split_counts.train", "12", "--benchmark.split_counts.test", "6"),
        *("--algorithm.max_why_per_round", "1", "--algorithm.candidates_per_why", "2"),
        *("--algorithm.max_rounds", "1", "--algorithm.patience", "1"),
    ),
}
TARGET = 1.5
FLASHRSI = [sys.executable, "-m", "flashrsi_dagster.cli"]


def cli_seconds(algorithm: str, root: Path) -> float:
    """`flashrsi run` of the example, from the folder holding its home, start to exit."""
    config = EXAMPLES / f"{algorithm}.yaml"
    command = [*FLASHRSI, "run", "--config", str(config), *SMALL[algorithm]]
    started = time.monotonic()
    with open(OUT / f"ui_experiment_cli_{algorithm}.log", "wb") as log:
        subprocess.run(command, cwd=root, stdout=log, stderr=subprocess.STDOUT, check=True)
    return time.monotonic() - started


def ui_seconds(algorithm: str, root: Path) -> tuple[float, float]:
    """The experiment started from the UI and driven by the sensor, launch to finish; and the
    UI's start-up."""
    home = root / ".flashrsi"
    config = EXAMPLES / f"{algorithm}.yaml"
    run_config = {
        "ops": {
            "create_experiment": {
                "config": {"config_file": str(config), "overrides": list(SMALL[algorithm])}
            }
        }
    }
    with DagsterUI(home, OUT / f"ui_experiment_ui_{algorithm}.log") as ui:
        ui.start_sensor("round_driver")
        started = time.monotonic()
        run_id = ui.launch_job("start_experiment", run_config)
        instance = persistent_instance(home)
        name = _created(instance, run_id)
        _finished(instance, ExperimentsResource.at(home), name)
        return time.monotonic() - started, ui.startup_s


def _created(instance: dg.DagsterInstance, run_id: str, timeout: float = 900) -> str:
    """The experiment the `start_experiment` run created, once it has."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        if run is not None and run.status == dg.DagsterRunStatus.SUCCESS:
            return run.tags[EXPERIMENT_TAG]
        if run is not None and run.is_finished:
            raise RuntimeError(f"start_experiment run {run_id} ended {run.status.value}")
        time.sleep(0.2)
    raise TimeoutError(f"start_experiment run {run_id} not done in {timeout:.0f} s")


def _finished(
    instance: dg.DagsterInstance, experiments: ExperimentsResource, name: str, timeout=3600
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        active = instance.get_runs(dg.RunsFilter(tags={EXPERIMENT_TAG: name}, statuses=ACTIVE))
        if not active:
            experiments.close()  # read the records afresh
            if experiments.next_step(name).finished:
                return
        failed = instance.get_runs(
            dg.RunsFilter(tags={EXPERIMENT_TAG: name}, statuses=[dg.DagsterRunStatus.FAILURE])
        )
        if failed:
            raise RuntimeError(f"{name}: run {failed[0].run_id} failed")
        time.sleep(0.5)
    raise TimeoutError(f"{name} not finished in {timeout} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithms", nargs="+", default=list(SMALL), choices=list(SMALL))
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for algorithm in args.algorithms:
        with tempfile.TemporaryDirectory() as cli_root, tempfile.TemporaryDirectory() as ui_root:
            cli = cli_seconds(algorithm, Path(cli_root))
            ui, startup = ui_seconds(algorithm, Path(ui_root))
        rows.append({"algorithm": algorithm, "cli_s": cli, "ui_s": ui, "ui_startup_s": startup})
        ratio = ui / cli
        verdict = "PASS" if ratio <= TARGET else "MISS"
        print(f"{algorithm:<13} CLI {cli:7.1f} s   UI {ui:7.1f} s   ratio {ratio:.2f}  {verdict}")
        print(f"{'':13} (the UI's own start-up, not counted: {startup:.1f} s)", flush=True)
    save("ui_experiment", {"target_ratio": TARGET, "rows": rows})


if __name__ == "__main__":
    main()
