"""The improver: the agent that makes a candidate. With `worker.harness: fixed` it is the
Worker role's own agent, the same for the whole experiment. With `adopted` it is the target's
adapter running a snapshot the experiment has adopted, with the Worker role's model,
endpoint, caps and permissions: each adopted harness takes part in making the next (seed
003, "h1 takes part in producing h2"). Which snapshot is adopted is each algorithm's rule;
what running it means is the same for all of them, and lives here.

The adopted harness is hostile like any candidate: it runs in the Worker role's jail, its
protected limits are the role's (the host's and the jail's, not its own files'), its model
calls go through the gateway under the role's caps, and the host, not the harness, commits
and scores what it edits."""

from __future__ import annotations

from flashrsi_dagster import instruction_markers as markers
from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.snapshots import Snapshot


def improver_role(worker: RoleConfig, target: RoleConfig) -> RoleConfig:
    """The role an adopted harness edits under: the Worker's model, endpoint, timeouts, caps,
    permissions and web; the target's adapter (the harness is the target's, so only its
    adapter can run it). `source_dir` is dropped: the snapshot's checkout is the harness."""
    return worker.model_copy(update={"type": target.type, "source_dir": None})


def improver_note(snapshot: Snapshot) -> str:
    """What the instruction adds under `adopted`: whose harness is editing, and that the
    candidate may edit the later ones in turn (a real model reads it as prose)."""
    return (
        f"\n{markers.IMPROVER} {snapshot.short_id}\n"
        "You are running the harness this experiment has adopted so far. The harness you "
        "make may be adopted in turn and then make the next candidates, so how it reads "
        "evidence and edits files matters as much as how it does its tasks.\n"
    )
