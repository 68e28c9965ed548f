"""The chosen branches' versions, placed beside the integration's edit for the Worker to read.

Each branch's final snapshot is checked out whole in a scratch folder and mounted read-only
at `<edit>/.branches/` (a bind mount in the jail; a copy for an unconfined Worker). The
context manager removes every trace before the edit is committed — also when the Worker
failed — so a reference never enters a candidate snapshot.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from flashrsi_dagster.environments.confinement import remove_lent
from flashrsi_dagster.environments.jail import Mount
from flashrsi_dagster.scratch import scratch_dir
from flashrsi_dagster.snapshots import SnapshotStore

REFERENCES = ".branches"


@contextlib.contextmanager
def branch_references(
    store: SnapshotStore, edit_dir: Path, branches: Mapping[str, str]
) -> Iterator[Mount]:
    """`branches`: module -> its final snapshot id. Yields the mount to give the Worker."""
    with scratch_dir("branches-") as tmp:
        checkouts = [store.check_out(sid, tmp / module) for module, sid in branches.items()]
        tmp.chmod(0o755)  # the jail user reads it (scratch folders are the framework's only)
        try:
            yield Mount(tmp, edit_dir / REFERENCES)
        finally:
            for checkout in checkouts:
                store.forget_checkout(checkout)
            remove_references(edit_dir)


def remove_references(edit_dir: Path) -> None:
    """Whatever is at `<edit>/.branches` now (a mount point, a link, a copy the Worker made)."""
    remove_lent(edit_dir / REFERENCES)
