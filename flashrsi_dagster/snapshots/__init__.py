"""Immutable harness snapshots on git: seed, child commits, checkouts, diffs and history."""

from flashrsi_dagster.snapshots.components import Components, ComponentsError
from flashrsi_dagster.snapshots.guard import HISTORY_DIR, RESERVED_NAMES, Refusal
from flashrsi_dagster.snapshots.store import (
    ChangedPath,
    DiffStats,
    EditOutcome,
    Snapshot,
    SnapshotError,
    SnapshotStore,
)

__all__ = [
    "HISTORY_DIR",
    "RESERVED_NAMES",
    "ChangedPath",
    "Components",
    "ComponentsError",
    "DiffStats",
    "EditOutcome",
    "Refusal",
    "Snapshot",
    "SnapshotError",
    "SnapshotStore",
]
