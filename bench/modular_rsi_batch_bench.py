"""ModularRSI batch rollouts: num_rollouts x tasks through the engine's own rollout path,
against the ideal schedule.

Run:  .venv/bin/python bench/modular_rsi_batch_bench.py [--latency-ms 1000] [--tasks 8]
                              [--rollouts 2] [--concurrency 4] [--confinement bwrap|none]

The experiment is `examples/modular_rsi.yaml` (MiniAgent target on its built-in harness, the
built-in text-classification tasks: one model call per rollout) in a temporary home, its target
pointed at a simulator server of our own that answers every model request after
`--latency-ms`; train holds `--tasks` tasks, all in one batch. A branch step's rollout part is
`ModularRSI.rollouts(seed, batch, path, num_rollouts)`: the seed snapshot checked out once, then
tasks x num_rollouts rollouts through the rollout engine at `benchmark.concurrency`, each
appended to its record. Measured:

- wall: that call's wall time for the batch (n = tasks x rollouts rollouts);
- per rollout alone: the median wall time of the same call for one task and one rollout (five
  tasks, after a warm-up), minus the median time of one check-out of the seed (which the
  batch pays once, not once per wave);
- ideal = ceil(n / concurrency) x per rollout alone: the batch as back-to-back waves of
  `concurrency` rollouts with nothing in between. Target: wall / ideal <= 1.15;
- model: the union of the simulator's request intervals (arrival to answer) during the batch,
  the time some model call is in flight; wall / model is reported beside (the waves' model
  time, without the agents' start-up and the framework's work between waves).

A report, not a test: it always exits 0. On a shared machine the figures move with the load:
repeat them.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from report import save

from flashrsi_dagster.algorithms.modular_rsi.run import ModularRSI
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "modular_rsi.yaml"
TARGET_RATIO = 1.15
SINGLES = 5


def _union(intervals: list[tuple[float, float]], window: tuple[float, float]) -> float:
    """Seconds covered by the intervals clipped to `window`."""
    total, end = 0.0, window[0]
    for a, b in sorted((max(a, window[0]), min(b, window[1])) for a, b in intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def _opened(home: Path, url: str, args: argparse.Namespace) -> ModularRSI:
    overrides = {
        "experiment.home": str(home),
        "experiment.confinement": args.confinement,
        "agent.llm.base_url": url,
        "agent.llm.max_retries": "0",
        "benchmark.split_counts.train": str(args.tasks + SINGLES + 1),
        "benchmark.split_counts.test": "1",
        "benchmark.concurrency": str(args.concurrency),
        "algorithm.batch_size": str(args.tasks),
        "algorithm.num_rollouts": str(args.rollouts),
    }
    argv = [item for key, value in overrides.items() for item in (f"--{key}", value)]
    return ModularRSI(open_experiment(load_config(EXAMPLE, argv)), log=lambda _: None)


def _timed(call) -> float:
    clock = time.perf_counter()
    call()
    return time.perf_counter() - clock


def measure(args: argparse.Namespace) -> dict:
    with (
        OfflineModelServer(ServerConfig(latency_ms=args.latency_ms)) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        algo = _opened(Path(tmp) / "home", server.url, args)
        try:
            seed, train = algo.seed(), algo.splits.train
            batch, singles = train[: args.tasks], train[args.tasks :]
            out = algo.experiment.paths.records / "bench"
            store = algo.experiment.snapshots

            def rollouts(tasks, name: str, n: int):
                return algo.rollouts(seed, tuple(tasks), out / f"{name}.jsonl", n)

            rollouts(singles[:1], "warm-up", 1)
            alone = [_timed(lambda t=t: rollouts([t], f"single-{t.id}", 1)) for t in singles[1:]]
            checkouts = []
            for i in range(SINGLES):
                folder = Path(tmp) / f"checkout-{i}"
                checkouts.append(_timed(lambda f=folder: store.check_out(seed, f)))
                store.forget_checkout(folder)
            started = time.time()
            wall = _timed(lambda: rollouts(batch, "batch", args.rollouts))
            window = (started, started + wall)
            final = rollouts(batch, "batch", args.rollouts)  # read back: every rollout recorded
        finally:
            algo.close()
        intervals = [
            (r.time.timestamp(), (r.time + timedelta(seconds=r.duration)).timestamp())
            for r in server.requests
        ]
    n = args.tasks * args.rollouts
    per_rollout = statistics.median(alone) - statistics.median(checkouts)
    ideal = math.ceil(n / args.concurrency) * per_rollout
    model = _union(intervals, window)
    return {
        "confinement": args.confinement,
        "latency_ms": args.latency_ms,
        "tasks": args.tasks,
        "num_rollouts": args.rollouts,
        "rollouts": n,
        "recorded": len(final),
        "concurrency": args.concurrency,
        "single_s": round(statistics.median(alone), 3),
        "checkout_s": round(statistics.median(checkouts), 3),
        "per_rollout_s": round(per_rollout, 3),
        "ideal_s": round(ideal, 3),
        "wall_s": round(wall, 3),
        "model_s": round(model, 3),
        "ratio": round(wall / ideal, 3),
        "ratio_to_model": round(wall / model, 3) if model else None,
        "target_ratio": TARGET_RATIO,
        "pass": wall / ideal <= TARGET_RATIO,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=1000)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--rollouts", type=int, default=2, help="num_rollouts per task")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--confinement", choices=("bwrap", "none"), default="bwrap", help="jailed runs or not"
    )
    args = parser.parse_args(argv)
    try:
        r = measure(args)
    except Exception as exc:  # a report, not a test: say what broke and exit 0
        print(f"modular_rsi batch bench could not run: {type(exc).__name__}: {exc}")
        return 0
    print(
        f"ModularRSI batch: {r['tasks']} tasks x {r['num_rollouts']} rollouts = {r['rollouts']} "
        f"({r['recorded']} recorded), concurrency {r['concurrency']}, model latency "
        f"{r['latency_ms']:.0f} ms (MiniAgent on the offline simulator, confinement "
        f"{r['confinement']})"
    )
    print(
        f"one rollout alone {r['single_s']:.3f} s - check-out {r['checkout_s']:.3f} s = "
        f"{r['per_rollout_s']:.3f} s; ideal ceil(n/C) x that = {r['ideal_s']:.3f} s; measured "
        f"{r['wall_s']:.3f} s (model calls in flight {r['model_s']:.3f} s)"
    )
    print(f"ratio {r['ratio']:.3f}   target <= {TARGET_RATIO}   {'PASS' if r['pass'] else 'MISS'}")
    save("modular_rsi_batch_bench", r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
