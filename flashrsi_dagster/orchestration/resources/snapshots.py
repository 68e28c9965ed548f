"""The snapshot store as a Dagster resource: each experiment's bare git repository, opened
with this deployment's guard settings."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from flashrsi_dagster.snapshots.guard import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_TOTAL_BYTES


class SnapshotStoreResource(dg.ConfigurableResource):
    """Immutable harness snapshots: seed, children, check-outs, diffs (one repo per experiment)."""

    max_file_bytes: int = Field(
        DEFAULT_MAX_FILE_BYTES,
        ge=1,
        description="Largest file a committed harness may hold; a Worker edit with a larger one "
        "is refused (and recorded as a rejection).",
    )
    max_total_bytes: int = Field(
        DEFAULT_MAX_TOTAL_BYTES,
        ge=1,
        description="Largest total of all files in one snapshot; a Worker edit that makes the "
        "harness larger is refused (and recorded as a rejection).",
    )
