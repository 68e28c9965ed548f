"""STOP's decisions for the ledger (`decisions.ledger`): `reject` of a round whose improver
was rejected or flagged for circumvention, as soon as it is recorded; at the promotion,
`adopt` of the promoted improver and `reject` of every other scored round, with their
train and dev meta-utilities."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.stop.plan import State
from flashrsi_dagster.algorithms.stop.records import RoundRecord
from flashrsi_dagster.decisions.ledger import EXPERIMENT, Decision, Evidence, Ref, raw_paths

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.stop.run import Stop

NAME = "stop"


def decisions(search: Stop, state: State) -> list[Decision]:
    seed = state.round(0)
    if seed is None:
        return []
    made = [
        _entry(search, f"{NAME}/r{r.round:03d}", "reject", r, seed, r.reason or "rejected")
        for r in state.rounds
        if r.round > 0 and (r.status == "rejected" or r.flagged)
    ]
    promotion = state.promotion
    if promotion is None:
        return made
    for r in state.rounds:
        if r.status == "evaluated" and not r.flagged and r.round not in (0, promotion.round):
            why = f"not promoted: dev meta-utility {r.dev_score:.3f} vs {promotion.dev_score:.3f}"
            made.append(_entry(search, f"{NAME}/promotion/r{r.round:03d}", "reject", r, seed, why))
    promoted = state.round(promotion.round)
    assert promoted is not None, "the promotion names a round with no record"
    why = (
        f"promoted: the best dev meta-utility, {promotion.dev_score:.3f} "
        f"(seed {seed.dev_score:.3f})"
    )
    made.append(_entry(search, f"{NAME}/promotion", "adopt", promoted, seed, why, EXPERIMENT))
    return made


def _entry(search, id_, decision, r: RoundRecord, seed: RoundRecord, reason, scope="search"):
    scores = {
        "train_meta_utility": r.train_meta_utility,
        "dev_meta_utility": r.dev_score,
        "baseline_dev_meta_utility": seed.dev_score,
        "circumvention_attempts": r.flagged,
    }
    return Decision(
        id=id_,
        decision=decision,
        algorithm=NAME,
        scope=scope,
        candidate=Ref(snapshot_id=r.snapshot_id, round=r.round),
        baseline=Ref(snapshot_id=seed.snapshot_id, round=0),
        reason=reason,
        evidence=Evidence(
            scores=scores, not_compared="meta-utilities: means over downstream tasks"
        ),
        eval_set=r.eval_set,
        raw=raw_paths(search.experiment.paths.root, search.layout.round(r.round)),
    )
