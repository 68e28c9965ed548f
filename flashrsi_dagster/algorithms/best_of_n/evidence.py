"""What every sample's Worker reads, and nothing else: the seed and its rollouts on the split
it is shown (`algorithm.shown`), as files, in a folder of the sample's own::

    .history/
      seed/                               a checkout of the seed
      rollouts/<split>/<task>.attempt-<n>.json   each of the seed's final rollouts

Each sample gets a fresh copy, in its own scratch folder, lent read-only (a bind mount in the
jail; a symlink to it for an unconfined Worker): no sample sees another's edit or results, and
a Worker that spoils its copy spoils only its own."""

from __future__ import annotations

from pathlib import Path

from flashrsi_dagster.records import Trajectory
from flashrsi_dagster.snapshots import Snapshot, SnapshotStore


def write_evidence(
    folder: Path, store: SnapshotStore, seed: Snapshot, split: str, rollouts: list[Trajectory]
) -> Path:
    store.check_out(seed, folder / "seed")
    store.forget_checkout(folder / "seed")
    shown = folder / "rollouts" / split
    shown.mkdir(parents=True)
    for t in rollouts:
        (shown / f"{t.task_id}.attempt-{t.attempt}.json").write_text(
            t.model_dump_json(indent=1) + "\n"
        )
    return folder
