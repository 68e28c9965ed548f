"""A STOP iteration's framework overhead, as a share of its model and task time.

Run:  .venv/bin/python bench/stop_overhead_bench.py [--latency 1.0] [--rounds 2]
                              [--path engine|dagster] [--profile]

The demo experiment (`examples/stop.yaml`: the seed improver and its rewrites on
`simulator/stop`, a MiniAgent target on `simulator/target`, 2 downstream tasks of 4 train
tasks, 8 dev) runs against a simulator server of our own that adds `--latency` seconds to every
model request. Each round is timed end to end: round 0 scores the seed improver (2 jailed
improver runs and the dev scoring of their solutions); a STOP iteration, round k >= 1, is the
current improver applied to its own code (one jailed run whose every meta-utility call scores a
program: 2 jailed runs more each), then the returned program scored (train, dev). `--path
engine` (the default) calls `Stop.evaluate_round(k)`; `--path dagster` runs each step as
`flashrsi run` does (an in-process Dagster run of the step's assets). Per round:

- model: time some model request is in flight — the union of the simulator's request intervals
  (the improver's and the target's);
- task: time some target rollout's agent process runs but no model request is in flight
  (its trajectory's `duration`, placed back from when its rollout returned);
- overhead = wall - model - task, the framework alone, split into
  - scoring: inside the host's answer to a utility call, outside its rollouts' batch (the
    solution's snapshot commit, its contamination check, the evaluator guard, records);
  - rollouts: inside a batch of rollouts (`evaluate_snapshot`: the checkout, the engine's
    threads, the rollout records), outside a rollout's start and process;
  - start: a rollout called until its agent process exists (its jail's start, the gateway's
    token, the fork server's fork);
  - improver: an improver's process alive, outside utility answers, model calls and rollouts
    (joining the jail, the runner's interpreter, the improver's own Python);
  - jail: inside `run_improver` outside its process (the jail's start and end, the gateway's
    run token and usage);
  - other: the rest (the improver's snapshot and contamination check, dev scoring around its
    rollouts, round records, the ledger, Dagster's run).
- share = overhead / (model + task). Target for a STOP iteration (round >= 1): <= 0.05.

`--profile` also runs round 1 under cProfile and prints the 25 functions with the most
cumulative time. A report, not a test: it always exits 0. On a shared machine the figures move
with the load: repeat them.
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import os
import pstats
import statistics
import sys
import tempfile
import time
from functools import cached_property, wraps
from pathlib import Path

from report import save
from round_overhead_bench import MODEL_APIS, Interval, union
from round_overhead_bench import _run as rollout_interval

from flashrsi_dagster.algorithms import searching
from flashrsi_dagster.algorithms.stop import run as stop_run
from flashrsi_dagster.algorithms.stop import sandbox, scoring
from flashrsi_dagster.algorithms.stop.run import Stop
from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.in_process import InProcessRuns
from flashrsi_dagster.deployment.instance import persistent_instance
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.resources import ExperimentsResource

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "stop.yaml"
TARGET_SHARE = 0.05

SEEN: dict[str, list] = {
    "rollouts": [],
    "starts": [],
    "batches": [],
    "answers": [],
    "launches": [],
    "jails": [],
}
"""Intervals noted by the timing wrappers below, cleared before each round."""


def _timed(into: str, fn):
    @wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.time()
        try:
            return fn(*args, **kwargs)
        finally:
            SEEN[into].append((start, time.time()))

    return wrapper


class _TimedBenchmark:
    """The experiment's benchmark, noting each rollout's agent process."""

    def __init__(self, benchmark) -> None:
        self._benchmark = benchmark

    def __getattr__(self, name: str):
        return getattr(self._benchmark, name)

    def rollout(self, agent, task, *, split: str, attempt: int):
        trajectory = self._benchmark.rollout(agent, task, split=split, attempt=attempt)
        start, process = rollout_interval(trajectory, time.time())
        SEEN["starts"].append(start)
        SEEN["rollouts"].append(process)
        return trajectory


def instrument() -> None:
    """Time the improver runs, their processes, the utility answers and the rollouts (this
    process only: the engine path and the in-process Dagster path both run here)."""
    run_improver = _timed("jails", sandbox.run_improver)
    for module in (sandbox, scoring, stop_run):
        module.run_improver = run_improver  # type: ignore[attr-defined]
    sandbox._launch = _timed("launches", sandbox._launch)  # type: ignore[assignment]
    searching.evaluate_snapshot = _timed("batches", searching.evaluate_snapshot)
    answer = sandbox.UtilityService.answer

    def timed_answer(self, message):
        if message.get("op") != "utility":
            return answer(self, message)
        return _timed("answers", answer)(self, message)

    sandbox.UtilityService.answer = timed_answer  # type: ignore[method-assign]

    def benchmark(self):
        return _TimedBenchmark(self.builders.benchmark(self.experiment.config.benchmark))

    prop = cached_property(benchmark)
    prop.__set_name__(Stop, "benchmark")
    Stop.benchmark = prop  # type: ignore[assignment]


def breakdown(window: Interval, model: list[Interval]) -> dict:
    """Each instant of the window counted once: model if a model request is in flight, else
    task if a rollout's process runs, else the innermost framework part running (the one
    that started last: a utility answer holds a whole improver run when an improver scores
    programs), else other."""
    parts = [(a, b, name) for name in KEY for a, b in SEEN[KEY[name]]]
    model_u, task_u = union(model, window), union(SEEN["rollouts"], window)
    edges = sorted(
        {
            *window,
            *(t for a, b in [*model_u, *task_u] for t in (a, b)),
            *(t for a, b, _ in parts for t in (a, b)),
        }
    )
    row = dict.fromkeys(("model_s", "task_s", *(f"{name}_s" for name in KEY), "other_s"), 0.0)
    for a, b in itertools.pairwise(edges):
        if not (window[0] <= a and b <= window[1]) or b <= a:
            continue
        mid = (a + b) / 2
        if covers(model_u, mid):
            row["model_s"] += b - a
        elif covers(task_u, mid):
            row["task_s"] += b - a
        else:
            active = [(x, name) for x, y, name in parts if x <= mid < y]
            row[f"{max(active)[1] if active else 'other'}_s"] += b - a
    wall = window[1] - window[0]
    work = row["model_s"] + row["task_s"]
    row |= {"wall_s": wall, "overhead_s": wall - work}
    row["share"] = row["overhead_s"] / work if work else float("inf")
    row["share_of_wall"] = row["overhead_s"] / wall
    return row


def covers(spans: list[Interval], t: float) -> bool:
    return any(a <= t < b for a, b in spans)


KEY = {
    "scoring": "answers",
    "rollouts": "batches",
    "start": "starts",
    "improver": "launches",
    "jail": "jails",
}
"""Each framework part and the intervals it is timed by (see the module's docstring)."""


def timed_round(k: int, server: OfflineModelServer, step) -> dict:
    for seen in SEEN.values():
        seen.clear()
    first = len(server.requests)
    start = time.time()
    status = step()
    window = (start, time.time())
    model = [
        (r.time.timestamp(), r.time.timestamp() + r.duration)
        for r in server.requests[first:]
        if r.api in MODEL_APIS
    ]
    row = {"round": k, "status": status, "model_calls": len(model)}
    row |= {"improver_runs": len(SEEN["jails"]), "rollouts": len(SEEN["rollouts"])}
    return row | breakdown(window, model)


def engine_rounds(config, server, rounds: int, profile: bool) -> list[dict]:
    stop = Stop(open_experiment(config), log=lambda _: None)
    try:
        return [
            timed_round(k, server, lambda k=k: _profiled(profile and k == 1, stop, k))
            for k in range(rounds + 1)
        ]
    finally:
        stop.close()


def _profiled(profile: bool, stop: Stop, k: int) -> str:
    if not profile:
        return stop.evaluate_round(k).status
    profiler = cProfile.Profile()
    record = profiler.runcall(stop.evaluate_round, k)
    print(f"\nround {k} under cProfile (cumulative, this process only):")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    return record.status


def dagster_rounds(config, server, rounds: int) -> list[dict]:
    home, name = config.experiment.home, config.experiment.name
    open_experiment(config)
    instance = persistent_instance(home)
    experiments = ExperimentsResource.at(home)
    defs_for("stop").register(instance, name, experiments.algorithm(name))
    runs = InProcessRuns(instance, str(home))

    def one_round(k: int) -> str:
        assert runs.execute("stop", name, experiments.next_step(name))
        return experiments.algorithm(name).read_state().round(k).status

    try:
        return [timed_round(k, server, lambda k=k: one_round(k)) for k in range(rounds + 1)]
    finally:
        experiments.close()
        instance.dispose()


def measure(latency: float, rounds: int, path: str, profile: bool) -> list[dict]:
    with (
        OfflineModelServer(ServerConfig(latency_ms=latency * 1000)) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        config = load_config(
            EXAMPLE,
            [
                *("--experiment.home", str(Path(tmp) / "home")),
                *("--algorithm.rounds", str(rounds)),
                *("--agent.llm.base_url", server.url),
                *("--algorithm.improver.llm.base_url", server.url),
            ],
        )
        if path == "dagster":
            return dagster_rounds(config, server, rounds)
        return engine_rounds(config, server, rounds, profile)


def show(rows: list[dict]) -> None:
    print(
        "round status    runs rollouts calls  wall s model s task s | scoring rollouts start "
        "improver  jail  other | overhead  share"
    )
    for r in rows:
        print(
            f"{r['round']:>5} {r['status']:<9} {r['improver_runs']:>4} {r['rollouts']:>8} "
            f"{r['model_calls']:>5} {r['wall_s']:>7.2f} {r['model_s']:>7.2f} {r['task_s']:>6.2f} "
            f"| {r['scoring_s']:>7.2f} {r['rollouts_s']:>8.2f} {r['start_s']:>5.2f} "
            f"{r['improver_s']:>8.2f} {r['jail_s']:>5.2f} "
            f"{r['other_s']:>6.2f} | {r['overhead_s']:>8.2f} {r['share']:>6.1%}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model request")
    parser.add_argument("--rounds", type=int, default=2, help="STOP iterations after the seed")
    parser.add_argument("--path", choices=("engine", "dagster"), default="engine")
    parser.add_argument("--profile", action="store_true", help="round 1 under cProfile")
    args = parser.parse_args(argv)
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(
        f"STOP framework overhead per iteration: examples/stop.yaml, {args.rounds} rounds, "
        f"model latency {args.latency:g} s, {args.path} path, load average {' '.join(load)}"
    )
    instrument()
    rows = measure(args.latency, args.rounds, args.path, args.profile and args.path == "engine")
    show(rows)
    iterations = [r["share"] for r in rows if r["round"] >= 1]
    share = statistics.median(iterations)
    print(
        f"\nmedian overhead of a STOP iteration: {share:.1%} of its model and task time   "
        f"target <= {TARGET_SHARE:.0%}   {'PASS' if share <= TARGET_SHARE else 'MISS'}"
    )
    report = {
        "latency_s": args.latency,
        "path": args.path,
        "loadavg": load,
        "cpus": os.cpu_count(),
        "target_share": TARGET_SHARE,
        "median_share": round(share, 4),
        "pass": share <= TARGET_SHARE,
        "rounds": [
            {k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in rows
        ],
    }
    save(f"stop_overhead_bench_{args.path}", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
