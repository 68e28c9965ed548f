"""The Worker's history folder: every earlier version and every record, as files.

Built fresh inside the Worker's edit folder before each step and removed before the commit::

    .history/
      index.json                    snapshot id -> its folder, round, parent, dev score, status
      snapshots/<short id>/         a checkout of every evaluated snapshot (regressed ones too)
      trajectories/round-<k>/
        round.json                  the round's outcome (evaluated / rejected, score, reason)
        edit.json                   the edit decision of a Worker step (committed, no-op, refused)
        worker.json                 the Worker's own trajectory of that step
        dev/<task id>.json          every evaluation rollout (redacted, as recorded)

Records are copied as written (already redacted); nothing is concatenated or truncated, and
every path is relative to the edit folder, so moving that folder moves a working history.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from flashrsi_dagster.algorithms.meta_harness.records import Layout, RoundRecord
from flashrsi_dagster.records import Redactor, write_text_atomic
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.snapshots import SnapshotStore

HISTORY = ".history"


def build_history(
    edit_dir: Path, store: SnapshotStore, layout: Layout, rounds: list[RoundRecord]
) -> Path:
    history = edit_dir / HISTORY
    index: dict[str, dict] = {}
    for record in rounds:
        if record.snapshot_id and record.snapshot_id not in index:
            folder = Path("snapshots") / record.snapshot_id[:12]
            store.check_out(record.snapshot_id, history / folder)
            store.forget_checkout(history / folder)
            index[record.snapshot_id] = {
                "folder": f"{HISTORY}/{folder.as_posix()}",
                "round": record.round,
                "parent_id": record.parent_id,
                "dev_score": record.dev_score,
                "status": record.status,
            }
        _copy_round(history / "trajectories" / f"round-{record.round:03d}", layout, record.round)
    write_text_atomic(history / "index.json", json.dumps(index, indent=1) + "\n")
    return history


def remove_history(edit_dir: Path) -> None:
    shutil.rmtree(edit_dir / HISTORY, ignore_errors=True)


def _copy_round(folder: Path, layout: Layout, k: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for source, name in (
        (layout.round(k), "round.json"),
        (layout.edit(k), "edit.json"),
        (layout.worker(k), "worker.json"),
    ):
        if source.exists():
            shutil.copyfile(source, folder / name)
    rollouts = layout.rollouts(k)
    if rollouts.exists():
        (folder / "dev").mkdir(exist_ok=True)
        for trajectory in RolloutRecord(rollouts, Redactor(environ={})).load():
            name = f"{trajectory.task_id}.attempt-{trajectory.attempt}.json"
            (folder / "dev" / name).write_text(trajectory.model_dump_json(indent=1) + "\n")
