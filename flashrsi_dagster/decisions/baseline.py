"""The experiment's baseline as every algorithm and command reads it: the one place that says
which snapshot later runs and later rounds start from, after promotions and roll-backs.

The ledger is the pointer (`Ledger.baseline`: the last `experiment` entry that adopted or
restored a snapshot). A roll-back restores an earlier baseline for what comes after it: an
algorithm that adopts during its search (the Evolver promotes a node each round) continues
from the restored snapshot (`restored`), and never adopts again by itself a snapshot a
roll-back set aside (`set_aside`), or its next round would promote it straight back.
"""

from __future__ import annotations

from flashrsi_dagster.decisions.ledger import EXPERIMENT, Ledger


def current(ledger: Ledger, seed_id: str) -> str:
    """The snapshot later runs start from: the ledger's baseline, else the seed."""
    entry = ledger.baseline()
    return (entry.candidate.snapshot_id if entry else None) or seed_id


def restored(ledger: Ledger) -> str | None:
    """The snapshot a roll-back made the baseline, while it still is (nothing adopted since);
    None otherwise."""
    entry = ledger.baseline()
    return entry.candidate.snapshot_id if entry and entry.decision == "rollback" else None


def set_aside(ledger: Ledger) -> frozenset[str]:
    """The snapshots a roll-back replaced and no later entry made the baseline again."""
    aside: set[str] = set()
    for entry in ledger.entries():
        if entry.scope != EXPERIMENT or entry.decision == "reject":
            continue
        if entry.decision == "rollback" and entry.baseline.snapshot_id:
            aside.add(entry.baseline.snapshot_id)
        aside.discard(entry.candidate.snapshot_id or "")
    return frozenset(aside)
