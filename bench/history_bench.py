"""Time to build the Meta-Harness Worker's history folder at round 1 vs round 30.

Run:  .venv/bin/python bench/history_bench.py [--rounds 30] [--tasks 40] [--repeats 3]

A synthetic experiment: the built-in MiniAgent harness as seed, one committed child per round
(a changed prompt line), and per round a dev record of `--tasks` rollouts. Before every Worker
step the algorithm brings the history view up to date (`HistoryView.update`), which a jailed
Worker then sees through a read-only bind mount: nothing is copied into its folder and
nothing is checked after it. The update is timed at step 1 and at step `--rounds`, over
`--repeats` whole experiments (median); the check an unconfined Worker's step adds
(`HistoryView.intact`) is reported beside it, and so is a plain build from the records
alone (a fresh view), for comparison.
Target: step 30 / step 1 <= 1.5 for the build. It runs in the temp folder (where the cache
lives) and in /dev/shm: on a VM's disk, writeback stalls make every file creation slow down as
the run goes on, whatever the algorithm does; tmpfs shows what the algorithm itself costs.
A report, not a test: it always exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from report import save

from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.algorithms.meta_harness.history import HistoryView
from flashrsi_dagster.algorithms.meta_harness.records import Layout, RoundRecord
from flashrsi_dagster.records import RecordStore, Redactor, Status, Trajectory
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.snapshots import SnapshotStore

TARGET_RATIO = 1.5


def _round(store: SnapshotStore, layout: Layout, seed, k: int, tasks: int, tmp: Path):
    snapshot = seed
    if k:
        work = store.check_out(seed, tmp / f"w{k}")
        (work / "prompts" / "system.md").write_text(f"prompt of round {k}\n")
        snapshot = store.commit_child(seed, work, message=f"round {k}").snapshot
    records = RecordStore(layout.folder.parent, Redactor(environ={}))
    record = RolloutRecord(layout.rollouts(k), records)
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
    records.write(layout.round(k), round_record)
    return round_record


def _time_step(view: HistoryView, rounds) -> tuple[float, float]:
    clock = time.perf_counter()
    view.update(rounds)
    updated = time.perf_counter()
    view.update(rounds, watch=True)  # nothing new: what watching adds is the walk
    assert view.intact()
    checked = time.perf_counter()
    return updated - clock, checked - updated


def _experiment(n_rounds: int, tasks: int, tmp: Path) -> dict[int, tuple[float, float, float]]:
    """(update, unconfined check, plain build) at step 1 and step n_rounds of one experiment."""
    store = SnapshotStore(tmp / "store", secret_filter=Redactor(environ={}))
    layout = Layout(tmp / "records")
    view = HistoryView(tmp / "view", store, layout)
    seed = store.create_seed(HARNESS)
    rounds, timings = [], {}
    for k in range(n_rounds):
        rounds.append(_round(store, layout, seed, k, tasks, tmp))
        update, check = _time_step(view, rounds)
        if len(rounds) in (1, n_rounds):
            plain = HistoryView(tmp / f"plain-{k}", store, layout)
            timings[len(rounds)] = (update, check, _time_step(plain, rounds)[0])
    return timings


def measure(n_rounds: int, tasks: int, repeats: int, folder: str | None = None) -> dict:
    runs = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(dir=folder) as tmp_name:
            runs.append(_experiment(n_rounds, tasks, Path(tmp_name)))

    def median(step: int, part: int) -> float:
        return statistics.median(run[step][part] for run in runs)

    first, last = median(1, 0), median(n_rounds, 0)
    checked_first = first + median(1, 1)
    checked_last = last + median(n_rounds, 1)
    return {
        "folder": folder or tempfile.gettempdir(),
        "rounds": n_rounds,
        "tasks": tasks,
        "repeats": repeats,
        "update_step_1_s": round(first, 4),
        "update_step_last_s": round(last, 4),
        "ratio": round(last / first, 2),
        "unconfined_step_1_s": round(checked_first, 4),
        "unconfined_step_last_s": round(checked_last, 4),
        "ratio_unconfined": round(checked_last / checked_first, 2),
        "plain_build_step_1_s": round(median(1, 2), 4),
        "plain_build_step_last_s": round(median(n_rounds, 2), 4),
        "plain_ratio": round(median(n_rounds, 2) / median(1, 2), 2),
        "target_ratio": TARGET_RATIO,
        "pass": last / first <= TARGET_RATIO,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--dir",
        action="append",
        help="folder to build in (repeatable); default: the temp folder, and /dev/shm if any",
    )
    args = parser.parse_args(argv)
    folders = args.dir or [None, *(["/dev/shm"] if Path("/dev/shm").is_dir() else [])]
    results = [measure(args.rounds, args.tasks, args.repeats, f) for f in folders]
    for r in results:
        _print(r)
    save("history_bench", {"results": results})
    return 0


def _print(r: dict) -> None:
    print(
        f"\nhistory folder in {r['folder']}: {r['tasks']} dev rollouts per round, "
        f"median of {r['repeats']}"
    )
    for label, key in (("update (jailed)", ""), ("update + check", "_unconfined")):
        first = r["update_step_1_s"] if not key else r["unconfined_step_1_s"]
        last = r["update_step_last_s"] if not key else r["unconfined_step_last_s"]
        print(
            f"{label:>18}: step 1 {first * 1000:.1f} ms   step {r['rounds']} "
            f"{last * 1000:.1f} ms   ratio {r['ratio' + key]:.2f}"
        )
    print(
        f"{'plain build':>18}: step 1 {r['plain_build_step_1_s'] * 1000:.1f} ms   step "
        f"{r['rounds']} {r['plain_build_step_last_s'] * 1000:.1f} ms   ratio {r['plain_ratio']:.2f}"
    )
    print(f"target: update ratio <= {TARGET_RATIO}   {'PASS' if r['pass'] else 'MISS'}")


if __name__ == "__main__":
    sys.exit(main())
