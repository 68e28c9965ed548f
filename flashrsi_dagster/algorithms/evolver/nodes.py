"""A candidate's node: its identity, its git snapshot, its final state and the statistics of
the gates it went through (`nodes/<id>.json`).

States: `pruned_inert` (its mechanism never fired: Gate-b), `pruned_at_screen` (culled),
`pruned_at_confirm` (Gate2: no win over vanilla on the whole train set), `promoted_to_baseline`
(the round's best, the new parent), `errored` (its own machinery failed: design, apply, a
rollout fault), `blocked_l1` (refused before any run: the path guard, the beacon guard, a
protected file, the content check), `archived-methodology-failure` (set aside by the operator
or a later audit: its evidence is not to be trusted, kept for the record)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flashrsi_dagster.records import Record

NodeState = Literal[
    "pruned_inert",
    "pruned_at_screen",
    "pruned_at_confirm",
    "promoted_to_baseline",
    "errored",
    "blocked_l1",
    "archived-methodology-failure",
    "in_library",
]
"""The SOP's seven states, and `in_library`: passed every gate, not (yet) the parent."""


class Node(Record):
    kind: Literal["evolver_node"] = "evolver_node"
    id: str = Field(description="`r<round>.<slot>`: the round and the WHY x candidate slot.")
    round: int
    slot: str
    why: str
    where: str | None = Field(None, description="Bound from the changed files (None: none).")
    declared_where: str | None = Field(None, description="What the designer said; audit only.")
    parent_id: str = Field(description="The parent snapshot the candidate was made from.")
    snapshot_id: str | None = Field(None, description="The candidate's git commit, if any.")
    state: NodeState
    reason: str
    screen: dict | None = None
    confirm_mean: float | None = None
    vanilla_mean: float | None = None
    gates: list[dict] = Field(default_factory=list)
    library: bool = Field(
        False, description="Passed every gate: in the library the next parent is picked from."
    )
    credited_2sigma: bool | None = Field(None, description="The paired 2-sigma label only.")
    paired: dict | None = Field(
        None, description="Paired statistics against vanilla (z, lift, small-n tests)."
    )
    changed: list[str] = Field(default_factory=list, description="`<status> <path>` per file.")
    fired: list[str] | None = Field(
        None, description="Train tasks the beacon fired on; None: the candidate has no beacon."
    )
    eval_set: str | None = Field(None, description="The train set's version it ran on.")
    produced_by: str | None = Field(
        None,
        description="The snapshot whose harness designed it (`worker.harness: adopted`); "
        "None: the Worker role's own harness.",
    )
    improver_failed: bool = Field(
        False,
        description="Its design run failed with an adopted harness as the Worker: that "
        "harness designs no more candidates (the Worker role's own takes its turns).",
    )
