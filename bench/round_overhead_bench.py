"""Framework overhead per Meta-Harness round, as a share of the round's wall time.

Run:  .venv/bin/python bench/round_overhead_bench.py [--latency 1.0] [--tasks 10] [--steps 2]
                              [--concurrency 4] [--parallel 1] [--path dagster|engine|ui]
                              [--driver launch|sensor]

The demo experiment (`examples/meta_harness.yaml`: MiniAgent target and Worker on the offline
simulator, built-in text-classification tasks) runs with `--tasks` dev tasks against a simulator
server of our own that adds `--latency` seconds to every model request. Each round is timed end
to end as `flashrsi run` runs it (`--path dagster`, the default): one in-process Dagster run of
the round's assets on the persistent instance, resources set up and torn down, assets written
by the IO manager. `--path engine` calls the engine's steps directly instead (round 0 is
`evaluate_seed()`, round k is `propose(k)`), to show what Dagster adds. `--path ui` runs the
experiment as `flashrsi run` does and again, in a fresh home, with every round launched as the
UI launches it (`dagster_ui.py`: `dagster dev`, a GraphQL launch, the daemon's run queue, a run
worker process that loads the code location), and reports each round's wall time on both
paths and their ratio (target: the median ratio <= 2); with `--driver sensor` the round driver
sensor launches the rounds instead, and a round counts from the end of the one before. Per
round of the CLI's path:

- wall: the round's wall-clock time;
- model: time some model request is in flight — the union of the simulator's request
  intervals (arrival to answer, from its request log) inside the round;
- task: time some agent process runs but no model request is in flight — the agent doing the
  task: its start-up, its loop, its tool commands. A process's interval is its trajectory's
  `duration` (counted from when the process exists) back from when its rollout returned, or
  when the Worker's trajectory was written. The built-in tasks have no environment and a
  string-compare verifier, so the task's own work all happens inside the agent process;
- overhead = wall - model - task: no agent process running, i.e. the framework alone
  (Dagster's run and its resources, snapshots, checkouts, history folder, records, launching
  agent processes, scoring, the parquet and JSON asset values);
  `launch` is the part of it spent waiting for agent processes to start;
- share = overhead / wall. Target: the median share over the rounds <= 0.05 at concurrency 4.

With concurrency 1 rollouts run one after another, so the unions are plain sums and the parts
add up exactly. With concurrency N the unions measure the critical path: framework work done
while some agent runs is hidden, as it costs no wall time. `--parallel N` also runs the
experiment at concurrency N and reports it beside (0 skips it); the PASS/MISS line is for
`--concurrency` (default 4). A report, not a test: it always exits 0. On a shared machine the
figures move with the load: repeat them.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from dagster_ui import DagsterUI, wait_for_run, wait_for_tagged_run
from report import OUT, save

from flashrsi_dagster.algorithms.meta_harness.history import HistoryView
from flashrsi_dagster.algorithms.meta_harness.records import Layout
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.in_process import InProcessRuns
from flashrsi_dagster.deployment.instance import persistent_instance
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.experiment.lock import driving
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.resources import ExperimentsResource, HarborEnvironmentResource
from flashrsi_dagster.records import Trajectory, read_record

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "meta_harness.yaml"
TARGET_SHARE = 0.05
TARGET_RATIO = 2.0
MODEL_APIS = ("chat", "responses", "anthropic")

Interval = tuple[float, float]


def union(intervals: Iterable[Interval], window: Interval) -> list[Interval]:
    """The intervals clipped to `window` and merged where they overlap."""
    merged: list[Interval] = []
    for a, b in sorted((max(a, window[0]), min(b, window[1])) for a, b in intervals):
        if b <= a:
            continue
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def length(intervals: list[Interval]) -> float:
    return sum(b - a for a, b in intervals)


def _run(trajectory: Trajectory, end: float) -> tuple[Interval, Interval]:
    """(launch, process): `started` is taken when the agent is called, `duration` from when
    its process exists, so the process is placed back from its end and the gap is launching."""
    start = end - trajectory.duration
    return (trajectory.started.timestamp(), start), (start, end)


class _TimedBenchmark:
    """The experiment's benchmark, noting when each rollout returned (in `RUNS`)."""

    def __init__(self, benchmark) -> None:
        self._benchmark = benchmark

    def __getattr__(self, name: str):
        return getattr(self._benchmark, name)

    def rollout(self, agent, task, *, split: str, attempt: int) -> Trajectory:
        trajectory = self._benchmark.rollout(agent, task, split=split, attempt=attempt)
        RUNS.append(_run(trajectory, time.time()))
        return trajectory


RUNS: list[tuple[Interval, Interval]] = []


class _TimedHarbor(HarborEnvironmentResource):
    """The benchmark resource of the Dagster path, with every rollout timed."""

    def benchmark(self, config):
        return _TimedBenchmark(super().benchmark(config))


def _worker_run(layout: Layout, k: int) -> list[tuple[Interval, Interval]]:
    """The Worker's run of step k; its trajectory is written as soon as the run returns."""
    path = layout.worker(k)
    if not k or not path.exists():
        return []
    return [_run(read_record(path, Trajectory), path.stat().st_mtime)]


def _breakdown(window: Interval, model: list[Interval], runs: list) -> dict:
    wall = window[1] - window[0]
    model_u = union(model, window)
    processes = [process for _, process in runs]
    busy = length(union([*processes, *model_u], window))  # model calls lie inside processes
    launching = length(union([*processes, *model_u, *(launch for launch, _ in runs)], window))
    return {
        "wall_s": wall,
        "model_s": length(model_u),
        "task_s": busy - length(model_u),
        "overhead_s": wall - busy,
        "launch_s": launching - busy,
        "share": (wall - busy) / wall,
    }


def _timed(k: int, server: OfflineModelServer, layout: Layout, round_fn) -> dict:
    RUNS.clear()
    start = time.time()
    record = round_fn()
    window = (start, time.time())
    model = [
        (r.time.timestamp(), r.time.timestamp() + r.duration)
        for r in server.requests
        if r.api in MODEL_APIS
    ]
    runs = [*RUNS, *_worker_run(layout, k)]
    calls = sum(1 for a, _ in model if window[0] <= a <= window[1])
    row = {"round": k, "status": record.status, "runs": len(runs), "model_calls": calls}
    return row | _breakdown(window, model, runs)


def _engine_rounds(experiment, server: OfflineModelServer, steps: int) -> list[dict]:
    harness = MetaHarness(experiment, log=lambda _: None)
    harness.benchmark = _TimedBenchmark(harness.benchmark)
    steps_of = {0: harness.evaluate_seed} | {
        k: lambda k=k: harness.propose(k) for k in range(1, steps + 1)
    }
    try:
        return [_timed(k, server, harness.layout, steps_of[k]) for k in range(steps + 1)]
    finally:
        harness.close()
        harness.history.discard()


def _dagster_rounds(experiment, server: OfflineModelServer, steps: int) -> list[dict]:
    home, name = experiment.config.experiment.home, experiment.config.experiment.name
    instance = persistent_instance(home)
    experiments = ExperimentsResource.at(home)
    defs_for("meta_harness").register(instance, name, experiments.algorithm(name))
    layout = Layout.of(experiment.paths.records)
    runs = InProcessRuns(instance, str(home), _PARTS)

    def one_round(k: int):
        assert runs.execute("meta_harness", name, experiments.next_step(name))
        return experiments.algorithm(name).read_state().round(k)

    try:
        return [_timed(k, server, layout, lambda k=k: one_round(k)) for k in range(steps + 1)]
    finally:
        HistoryView.for_experiment(experiment.snapshots, layout).discard()


_PARTS = {"harbor": _TimedHarbor()}


def _ui_rounds(
    experiment, server: OfflineModelServer, steps: int, driver: str
) -> tuple[list[dict], float]:
    """Each round launched as the UI launches it (`dagster_ui.py`), timed from the launch
    request until the run is seen finished — or, with the `sensor` driver, the round driver
    sensor turned on and each round timed from the end of the one before; and how long
    `dagster dev` took to come up."""
    config = experiment.config
    home, name = config.experiment.home, config.experiment.name
    algorithm = defs_for(config.algorithm.name)
    instance = persistent_instance(home)
    experiments = ExperimentsResource.at(home)
    algorithm.register(instance, name, experiments.algorithm(name))
    rows = []
    # Launched by hand, the rounds are driven here: the driver lock keeps the round driver
    # sensor (on by default) off this experiment, as it does beside `flashrsi run`.
    hold = driving(Path(home) / name) if driver == "launch" else contextlib.nullcontext()
    try:
        with hold, DagsterUI(home, OUT / "dagster-dev.log") as ui:
            asked = time.time()
            if driver == "sensor":
                ui.start_sensor("round_driver")
            for k in range(steps + 1):
                if driver == "sensor":
                    key = algorithm.partitions.key(name, k, "c0")
                    run_id = wait_for_tagged_run(instance, {"dagster/partition": str(key)})
                else:
                    request = algorithm.request(name, experiments.next_step(name))
                    assert request is not None and request.partition_key is not None
                    asked = time.time()
                    run_id = ui.launch(request, request.partition_key.keys_by_dimension)
                run = wait_for_run(instance, run_id)
                rows.append(_ui_row(k, asked, run, server))
                asked = run["ended"]
            return rows, ui.startup_s
    finally:
        experiments.close()
        instance.dispose()


def _ui_row(k: int, asked: float, run: dict, server: OfflineModelServer) -> dict:
    calls = sum(1 for r in server.requests if asked <= r.time.timestamp() <= run["seen"])
    return {
        "round": k,
        "status": run["status"],
        "model_calls": calls,
        "wall_s": run["seen"] - asked,
        "queued_s": run["launched"] - asked,  # the launch (or sensor tick), the daemon's dequeue
        "worker_start_s": run["started"] - run["launched"],  # a process that loads the code
        "run_s": run["ended"] - run["started"],
    }


def _config(home: Path, url: str, tasks: int, steps: int, concurrency: int):
    return load_config(
        EXAMPLE,
        [
            *("--experiment.home", str(home)),
            *("--benchmark.limit", str(tasks)),
            *("--benchmark.concurrency", str(concurrency)),
            *("--algorithm.max_steps", str(steps)),
            *("--agent.llm.base_url", url),
            *("--algorithm.worker.llm.base_url", url),
        ],
    )


def measure(latency: float, tasks: int, steps: int, concurrency: int, path: str) -> dict:
    with (
        OfflineModelServer(ServerConfig(latency_ms=latency * 1000)) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        config = _config(Path(tmp), server.url, tasks, steps, concurrency)
        rounds_of = _dagster_rounds if path == "dagster" else _engine_rounds
        rounds = rounds_of(open_experiment(config), server, steps)
    return _summary(concurrency, rounds)


def measure_ui(latency: float, tasks: int, steps: int, concurrency: int, driver: str) -> dict:
    """The UI path beside the CLI's, each experiment in a fresh home; the ratio per round."""
    cli = measure(latency, tasks, steps, concurrency, "dagster")
    with (
        OfflineModelServer(ServerConfig(latency_ms=latency * 1000)) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        home = Path(tmp) / ".flashrsi"  # the code location's home, relative to where it runs
        config = _config(home, server.url, tasks, steps, concurrency)
        rounds, startup = _ui_rounds(open_experiment(config), server, steps, driver)
    for row, cli_row in zip(rounds, cli["rounds"], strict=True):
        row["cli_wall_s"] = cli_row["wall_s"]
        row["ratio"] = row["wall_s"] / cli_row["wall_s"]
    ratio = statistics.median(r["ratio"] for r in rounds)
    return {
        "concurrency": concurrency,
        "driver": driver,
        "cli": cli,
        "ui_startup_s": round(startup, 2),
        "rounds": [
            {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()} for r in rounds
        ],
        "median_ratio": round(ratio, 3),
        "pass": ratio <= TARGET_RATIO,
    }


def _summary(concurrency: int, rounds: list[dict]) -> dict:
    share = statistics.median(r["share"] for r in rounds)
    # From round 2 on both roles' agents exist: no round pays a one-time process start.
    warm = [r["share"] for r in rounds if r["round"] >= 2]
    total = sum(r["overhead_s"] for r in rounds) / sum(r["wall_s"] for r in rounds)
    return {
        "concurrency": concurrency,
        "rounds": [
            {k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in rounds
        ],
        "median_share": round(share, 4),
        "median_share_warm": round(statistics.median(warm), 4) if warm else None,
        "total_share": round(total, 4),
        "pass": share <= TARGET_SHARE,
    }


def _print(run: dict) -> None:
    print(f"\nconcurrency {run['concurrency']}")
    print("round  status     runs calls  wall s model s  task s overhead s launch s  share")
    for r in run["rounds"]:
        print(
            f"{r['round']:>5}  {r['status']:<9}  {r['runs']:>3} {r['model_calls']:>5} "
            f"{r['wall_s']:>7.2f} {r['model_s']:>7.2f} {r['task_s']:>7.2f} "
            f"{r['overhead_s']:>10.2f} {r['launch_s']:>8.2f} {r['share']:>6.1%}"
        )
    warm = run["median_share_warm"]
    print(
        f"median share {run['median_share']:.1%}; all rounds together {run['total_share']:.1%}"
        + (f"; median from round 2 (agents started) {warm:.1%}" if warm is not None else "")
    )


def _print_ui(run: dict) -> None:
    _print(run["cli"])
    how = {
        "launch": "launched as the UI launches them",
        "sensor": "driven by the round driver sensor (queued: from the previous round's end)",
    }[run["driver"]]
    print(f"\nthe same rounds {how}; `dagster dev` up in {run['ui_startup_s']:.1f} s, once")
    print("round  status    calls  wall s  queued s  worker start s  run s  CLI wall s  ratio")
    for r in run["rounds"]:
        print(
            f"{r['round']:>5}  {r['status']:<8} {r['model_calls']:>5} {r['wall_s']:>7.2f} "
            f"{r['queued_s']:>9.2f} {r['worker_start_s']:>15.2f} {r['run_s']:>6.2f} "
            f"{r['cli_wall_s']:>11.2f} {r['ratio']:>6.2f}"
        )
    print(
        f"\nmedian UI/CLI wall-time ratio per round: {run['median_ratio']:.2f}   "
        f"target <= {TARGET_RATIO:g}   {'PASS' if run['pass'] else 'MISS'}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model request")
    parser.add_argument("--tasks", type=int, default=10, help="dev tasks")
    parser.add_argument("--steps", type=int, default=2, help="Worker steps after the seed")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--parallel", type=int, default=1, help="also at this concurrency; 0: no")
    parser.add_argument("--path", choices=("dagster", "engine", "ui"), default="dagster")
    parser.add_argument(
        "--driver", choices=("launch", "sensor"), default="launch", help="--path ui: who launches"
    )
    args = parser.parse_args(argv)
    through = {
        "dagster": "through Dagster, as `flashrsi run`",
        "engine": "through the engine",
        "ui": "as `flashrsi run` and as launched from the UI",
    }[args.path]
    print(
        f"Meta-Harness framework overhead per round: {args.tasks} dev tasks, {args.steps} Worker "
        f"steps, model latency {args.latency:g} s (MiniAgent on the offline simulator), {through}"
    )
    if args.path == "ui":
        run = measure_ui(args.latency, args.tasks, args.steps, args.concurrency, args.driver)
        _print_ui(run)
        report = {"latency_s": args.latency, "tasks": args.tasks, "steps": args.steps}
        name = f"round_overhead_bench_ui_{args.driver}"
        save(name, report | {"target_ratio": TARGET_RATIO, **run})
        return 0
    levels = [args.concurrency]
    if args.parallel and args.parallel != args.concurrency:
        levels.append(args.parallel)
    runs = [measure(args.latency, args.tasks, args.steps, c, args.path) for c in levels]
    for run in runs:
        _print(run)
    head = runs[0]
    print(
        f"\nmedian overhead share at concurrency {head['concurrency']}: "
        f"{head['median_share']:.1%}   target <= {TARGET_SHARE:.0%}   "
        f"{'PASS' if head['pass'] else 'MISS'}"
    )
    result = {
        "path": args.path,
        "latency_s": args.latency,
        "tasks": args.tasks,
        "steps": args.steps,
        "target_share": TARGET_SHARE,
        "median_share": head["median_share"],
        "pass": head["pass"],
        "runs": runs,
    }
    save(f"round_overhead_bench_{args.path}", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
