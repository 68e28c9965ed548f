"""Rolling an experiment back to a known baseline, for the runs that come after it.

A roll-back is not a rejection: it judges no candidate, and it undoes nothing. It appends a
`rollback` entry to the ledger, naming the snapshot restored, the baseline it replaces, the
reason and the entry that had adopted it; the experiment's baseline (`Ledger.baseline`) is
that snapshot from then on. Every record stays as it was — rounds, promotion, sealed test,
earlier ledger entries — and the search itself is not re-run or re-opened.

A known baseline is the seed snapshot or one an `experiment` entry made the baseline before
(a promotion, an earlier roll-back). Anything else is refused (`RollbackError`).
"""

from __future__ import annotations

from flashrsi_dagster.decisions.ledger import EXPERIMENT, Decision, Evidence, Ledger, Ref
from flashrsi_dagster.snapshots import SnapshotError


class RollbackError(ValueError):
    """A roll-back refused (unknown snapshot, not a known baseline, already the baseline)."""


def known_baselines(ledger: Ledger, seed_id: str) -> dict[str, str]:
    """Snapshot id -> the ledger entry that made it a baseline (`seed` for the seed)."""
    known = {seed_id: "seed"}
    for entry in ledger.entries():
        sid = entry.candidate.snapshot_id
        if entry.scope == EXPERIMENT and entry.decision != "reject" and sid:
            known.setdefault(sid, entry.id)
    return known


def rollback(algorithm, to: str, reason: str | None = None) -> Decision:
    """Make snapshot `to` (an id or unique prefix) the experiment's baseline again."""
    experiment = algorithm.experiment
    with experiment.step_lock.held():
        experiment.records.verify()
        store = experiment.snapshots
        try:
            target = store.get(to)
        except SnapshotError as exc:
            raise RollbackError(str(exc)) from None
        ledger = Ledger.of(experiment)
        ledger.sync(algorithm.decisions(algorithm.read_state()))  # what the records say first
        seed = next(s for s in store.history() if s.parent_id is None)
        known = known_baselines(ledger, seed.id)
        if target.id not in known:
            listing = ", ".join(f"{sid[:12]} ({why})" for sid, why in known.items())
            raise RollbackError(
                f"snapshot {target.id[:12]} was never the experiment's baseline, so it is not a "
                f"known baseline to roll back to (known: {listing})"
            )
        current = ledger.baseline()
        current_id = current.candidate.snapshot_id if current else seed.id
        if target.id == current_id:
            raise RollbackError(f"snapshot {target.id[:12]} is the baseline already")
        entries = [e.id for e in ledger.entries() if e.decision == "rollback"]
        decision = Decision(
            id=f"rollback/{len(entries) + 1}",
            decision="rollback",
            algorithm=algorithm.name,
            scope=EXPERIMENT,
            candidate=Ref(snapshot_id=target.id, round=target.metadata.get("round")),
            baseline=Ref(snapshot_id=current_id),
            reason=reason or "rolled back by hand (no reason given)",
            evidence=Evidence(entries=[known[target.id], *([current.id] if current else [])]),
            eval_set=None,
        )
        return ledger.append(decision)
