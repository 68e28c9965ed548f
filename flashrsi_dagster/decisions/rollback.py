"""Rolling an experiment back to a known baseline, for the runs that come after it.

Seed 003: the host first cancels the runs in flight, waits for them to end, verifies what they
touched, then restores the baseline. In that order:

1. The request is checked (the snapshot exists and is a known baseline, not the current one)
   before anything is cancelled: a refused roll-back stops nothing.
2. Every run of the experiment still in flight is cancelled (`InFlight`: the Dagster layer's
   `deployment/halting.py`), and waited for, at most `wait` seconds: a run still active then
   refuses the roll-back, naming it, with nothing written.
3. What the runs could touch is verified: the records' integrity chain, and every snapshot the
   ledger names (and the one restored, with its ancestors) still under `refs/snapshots/`.
4. The baseline is restored: a `rollback` entry in the ledger, naming the snapshot restored,
   the baseline it replaces, the reason, the entries it rests on, the runs cancelled and what
   was verified. `Ledger.baseline` (read through `decisions.baseline`) is that snapshot from
   then on: later runs use it, and an algorithm that adopts during its search continues from it.

A roll-back is not a rejection: it judges no candidate, and it undoes nothing. Every record
stays as it was — rounds, promotion, sealed test, earlier ledger entries; a step the
cancellation cut off is the algorithm's to resume, as after any stop. External effects of the
cancelled runs (what their tools did outside the experiment) are not undone: the runs named
in the entry are where to look.

A known baseline is the seed snapshot or one an `experiment` entry made the baseline before
(a promotion, an earlier roll-back). Anything else is refused (`RollbackError`).
"""

from __future__ import annotations

import time
from typing import Protocol

from flashrsi_dagster.decisions.ledger import (
    EXPERIMENT,
    Decision,
    Evidence,
    Ledger,
    Ref,
    latest_baseline,
)
from flashrsi_dagster.snapshots import SnapshotError

WAIT = 120.0
"""Seconds a roll-back waits, by default, for the cancelled runs to end."""
POLL = 0.5


class RollbackError(ValueError):
    """A roll-back refused (unknown snapshot, not a known baseline, already the baseline,
    runs still in flight, records or snapshots damaged)."""


class InFlight(Protocol):
    """The experiment's runs as the host that schedules them sees them."""

    def cancel(self) -> list[str]:
        """Ask every active run of the experiment to stop: a line per run, what was done."""
        ...

    def active(self) -> list[str]:
        """The runs that may still write the experiment's records (a line per run)."""
        ...


def known_baselines(entries: list[Decision], seed_id: str) -> dict[str, str]:
    """Snapshot id -> the ledger entry that made it a baseline (`seed` for the seed)."""
    known = {seed_id: "seed"}
    for entry in entries:
        sid = entry.candidate.snapshot_id
        if entry.scope == EXPERIMENT and entry.decision != "reject" and sid:
            known.setdefault(sid, entry.id)
    return known


def rollback(
    algorithm,
    to: str,
    reason: str | None = None,
    runs: InFlight | None = None,
    wait: float = WAIT,
) -> Decision:
    """Make snapshot `to` (an id or unique prefix) the experiment's baseline again, after the
    runs in flight (`runs`; None: nothing schedules this experiment's runs) have ended."""
    experiment = algorithm.experiment
    experiment.records.verify()  # the ledger read to check the request must be the recorded one
    target = _checked(algorithm, to)
    cancelled = _halt(runs, wait) if runs is not None else []
    with experiment.step_lock.held():
        verified = _verify(experiment, target)
        ledger = Ledger.of(experiment)
        ledger.sync(algorithm.decisions(algorithm.read_state()))  # what the records say first
        known, current_id, current = _baselines(algorithm, ledger)
        if target == current_id:  # the runs cancelled may have adopted it since
            raise RollbackError(f"snapshot {target[:12]} is the baseline already")
        done = [e.id for e in ledger.entries() if e.decision == "rollback"]
        decision = Decision(
            id=f"rollback/{len(done) + 1}",
            decision="rollback",
            algorithm=algorithm.name,
            scope=EXPERIMENT,
            candidate=Ref(
                snapshot_id=target, round=experiment.snapshots.get(target).metadata.get("round")
            ),
            baseline=Ref(snapshot_id=current_id),
            reason=reason or "rolled back by hand (no reason given)",
            evidence=Evidence(
                entries=[known[target], *([current.id] if current else [])],
                runs=cancelled,
                verified=verified,
            ),
            eval_set=None,
        )
        return ledger.append(decision)


def _checked(algorithm, to: str) -> str:
    """The id of snapshot `to` if rolling back to it may go ahead; nothing is written."""
    try:
        target = algorithm.experiment.snapshots.get(to).id
    except SnapshotError as exc:
        raise RollbackError(str(exc)) from None
    ledger = Ledger(algorithm.experiment.paths.root)
    known, current_id, _ = _baselines(algorithm, ledger, derived=True)
    if target not in known:
        listing = ", ".join(f"{sid[:12]} ({why})" for sid, why in known.items())
        raise RollbackError(
            f"snapshot {target[:12]} was never the experiment's baseline, so it is not a "
            f"known baseline to roll back to (known: {listing})"
        )
    if target == current_id:
        raise RollbackError(f"snapshot {target[:12]} is the baseline already")
    return target


def _baselines(algorithm, ledger: Ledger, *, derived: bool = False):
    """The known baselines, the current baseline's id and its entry (None: the seed);
    `derived`: with the entries the records imply that are not on the ledger yet."""
    store = algorithm.experiment.snapshots
    seed = next(s for s in store.history() if s.parent_id is None).id
    entries = ledger.entries()
    if derived:
        held = {e.id for e in entries}
        entries += [d for d in algorithm.decisions(algorithm.read_state()) if d.id not in held]
    current = latest_baseline(entries)
    current_id = (current.candidate.snapshot_id if current else None) or seed
    return known_baselines(entries, seed), current_id, current


def _halt(runs: InFlight, wait: float) -> list[str]:
    """Cancel the runs in flight (and any started meanwhile) and wait for them, at most
    `wait` seconds; what was done to each."""
    cancelled = runs.cancel()
    deadline = time.monotonic() + wait  # from when they were asked: asking can be slow
    while still := runs.active():
        if time.monotonic() >= deadline:
            raise RollbackError(
                f"{len(still)} run(s) still in flight after waiting {wait:g} s, so nothing "
                f"was restored: {'; '.join(still)} (asked: {'; '.join(cancelled)}; wait for "
                "them, or fail them, and roll back again)"
            )
        time.sleep(POLL)
        cancelled = runs.cancel()
    return cancelled


def _verify(experiment, target: str) -> list[str]:
    """What the runs could have touched, checked before restoring: the records' chain, and
    every snapshot the ledger names still in the store (the target with its ancestors)."""
    from flashrsi_dagster.records import IntegrityError

    try:
        experiment.records.verify()
    except IntegrityError as exc:
        raise RollbackError(f"the records are damaged, nothing was restored: {exc}") from None
    store = experiment.snapshots
    held = store.parent_ids()
    named = {target}
    for entry in Ledger(experiment.paths.root).entries():
        for ref in (entry.candidate, entry.baseline):
            named |= {sid for sid in (ref.snapshot_id, ref.produced_by) if sid}
    missing = sorted(sid[:12] for sid in named if sid not in held)
    if missing:
        raise RollbackError(
            f"snapshot(s) named in the ledger are missing from {store.root}'s refs/snapshots: "
            f"{', '.join(missing)}; nothing was restored"
        )
    lineage = store.lineage(target)
    return [
        "records: integrity chain intact",
        f"snapshots: the {len(named)} the ledger names are in the store; "
        f"{target[:12]}'s lineage of {len(lineage)} readable",
    ]
