"""Random search's decisions for the ledger (`decisions.ledger`): `reject` of a round whose
edit gave no snapshot to evaluate, as soon as it is recorded; at the promotion, `adopt` of the
promoted snapshot and `reject` of every other evaluated round, each with its dev score and its
paired statistics against the seed's on the same dev tasks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashrsi_dagster.decisions.ledger import EXPERIMENT, Decision, Evidence, Ref, raw_paths
from flashrsi_dagster.rollouts.scores import scores_frame
from flashrsi_dagster.stats.paired import paired
from tests.algorithms.random_search.plan import State
from tests.algorithms.random_search.records import RoundRecord

if TYPE_CHECKING:
    from tests.algorithms.random_search.run import RandomSearch

NAME = "random_search"


def decisions(search: RandomSearch, state: State) -> list[Decision]:
    seed = state.round(0)
    if seed is None:
        return []
    made = [
        _entry(search, f"{NAME}/r{r.round:03d}", "reject", r, seed, r.reason or "rejected")
        for r in state.rounds
        if r.status == "rejected"
    ]
    promotion = state.promotion
    if promotion is None:
        return made
    for r in state.rounds:
        if r.status == "evaluated" and r.round not in (0, promotion.round):
            why = f"not promoted: dev score {r.dev_score:.3f} vs {promotion.dev_score:.3f}"
            made.append(_entry(search, f"{NAME}/promotion/r{r.round:03d}", "reject", r, seed, why))
    promoted = state.round(promotion.round)
    assert promoted is not None, "the promotion names a round with no record"
    why = f"promoted: the best dev score, {promotion.dev_score:.3f} (seed {seed.dev_score:.3f})"
    made.append(_entry(search, f"{NAME}/promotion", "adopt", promoted, seed, why, EXPERIMENT))
    return made


def _entry(search, id_, decision, r: RoundRecord, seed: RoundRecord, reason, scope="search"):
    return Decision(
        id=id_,
        decision=decision,
        algorithm=NAME,
        scope=scope,
        candidate=Ref(snapshot_id=r.snapshot_id, round=r.round),
        baseline=Ref(snapshot_id=seed.snapshot_id, round=0),
        reason=reason,
        evidence=_evidence(search, r, seed),
        eval_set=r.eval_set,
        raw=raw_paths(search.experiment.paths.root, search.layout.round(r.round)),
    )


def _evidence(search: RandomSearch, r: RoundRecord, seed: RoundRecord) -> Evidence:
    if r.status != "evaluated":
        return Evidence(not_compared="nothing was evaluated: the edit gave no snapshot")
    if r.round == 0:
        return Evidence(scores={"dev_score": r.dev_score}, not_compared="the seed itself")
    frame, base = (scores_frame(search.round_rollouts(k)) for k in (r.round, 0))
    return Evidence(
        scores={"dev_score": r.dev_score, "baseline_dev_score": seed.dev_score},
        paired=paired(frame, base).model_dump(mode="json"),
    )
