"""Time to build the Meta-Harness Worker's history folder at round 1 vs round 30.

Run:  .venv/bin/python bench/history_bench.py [--rounds 30] [--tasks 40]

A synthetic experiment: the built-in MiniAgent harness as seed, one committed child per round
(a changed prompt line), and per round a dev record of `--tasks` rollouts. The history is built
into a fresh edit folder, as the algorithm does before every Worker step. Target: round 30 /
round 1 <= 1.5. A report, not a test: it always exits 0.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from report import save

from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.algorithms.meta_harness.history import build_history
from flashrsi_dagster.algorithms.meta_harness.records import Layout, RoundRecord
from flashrsi_dagster.records import Redactor, Status, Trajectory, write_record
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.snapshots import SnapshotStore

TARGET_RATIO = 1.5


def _round(store: SnapshotStore, layout: Layout, seed, k: int, tasks: int, tmp: Path):
    snapshot = seed
    if k:
        work = store.check_out(seed, tmp / f"w{k}")
        (work / "prompts" / "system.md").write_text(f"prompt of round {k}\n")
        snapshot = store.commit_child(seed, work, message=f"round {k}").snapshot
    record = RolloutRecord(layout.rollouts(k), Redactor(environ={}))
    for i in range(tasks):
        record.append(
            Trajectory(
                task_id=f"t{i}",
                split="dev",
                snapshot_id=snapshot.id,
                status=Status.FAILURE,
                score=0.0,
                answer="benign",
                metadata={"expected": "malicious"},
                messages=[{"role": "user", "content": f"Text: message {i} " * 20}],
            )
        )
    round_record = RoundRecord(
        round=k,
        status="evaluated",
        snapshot_id=snapshot.id,
        parent_id=None if k == 0 else seed.id,
        dev_score=0.5,
    )
    write_record(layout.round(k), round_record, Redactor(environ={}))
    return round_record


def _time_build(store, layout, rounds, seed, tmp: Path, repeats: int = 5) -> float:
    samples = []
    for i in range(repeats):
        edit = store.check_out(seed, tmp / f"edit-{len(rounds)}-{i}")
        clock = time.perf_counter()
        build_history(edit, store, layout, rounds)
        samples.append(time.perf_counter() - clock)
        shutil.rmtree(edit)
    return statistics.median(samples)


def measure(n_rounds: int, tasks: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        store = SnapshotStore(tmp / "store", secret_filter=Redactor(environ={}))
        layout = Layout(tmp / "records")
        seed = store.create_seed(HARNESS)
        rounds, timings = [], {}
        for k in range(n_rounds):
            rounds.append(_round(store, layout, seed, k, tasks, tmp))
            if len(rounds) in (1, n_rounds):
                timings[len(rounds)] = _time_build(store, layout, rounds, seed, tmp)
    first, last = timings[1], timings[n_rounds]
    return {
        "rounds": n_rounds,
        "tasks": tasks,
        "round_1_s": round(first, 4),
        f"round_{n_rounds}_s": round(last, 4),
        "ratio": round(last / first, 2),
        "target_ratio": TARGET_RATIO,
        "pass": last / first <= TARGET_RATIO,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--tasks", type=int, default=40)
    args = parser.parse_args(argv)
    r = measure(args.rounds, args.tasks)
    print(f"history folder build, {r['tasks']} dev rollouts per round")
    print(
        f"round 1: {r['round_1_s'] * 1000:.1f} ms   round {r['rounds']}: "
        f"{r[f'round_{args.rounds}_s'] * 1000:.1f} ms   ratio {r['ratio']:.2f}   "
        f"target <= {TARGET_RATIO}   {'PASS' if r['pass'] else 'MISS'}"
    )
    save("history_bench", r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
