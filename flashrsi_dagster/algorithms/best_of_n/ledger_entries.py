"""Best-of-N's decisions for the ledger (`decisions.ledger`): `reject` of a sample whose edit
gave nothing to evaluate (or failed the content check), as soon as it is recorded; at the
promotion, `adopt` of the promoted snapshot and `reject` of every other evaluated sample,
each with its dev score and its paired statistics against the seed on the same dev tasks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.best_of_n.plan import State, candidate_name
from flashrsi_dagster.algorithms.best_of_n.records import SampleRecord
from flashrsi_dagster.decisions.adoption import refused_entry
from flashrsi_dagster.decisions.ledger import EXPERIMENT, Decision, Evidence, Ref, raw_paths
from flashrsi_dagster.rollouts.scores import scores_frame
from flashrsi_dagster.stats.paired import paired

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.best_of_n.run import BestOfN

NAME = "best_of_n"


def decisions(search: BestOfN, state: State) -> list[Decision]:
    seed = state.round(0)
    if seed is None:
        return []
    made = [
        _entry(search, f"{NAME}/{_id(r)}", "reject", r, seed, r.reason or "rejected")
        for r in state.samples
        if r.status == "rejected"
    ]
    promotion = state.promotion
    if promotion is None:
        return made
    promoted = state.round(promotion.round, promotion.slot)
    assert promoted is not None, "the promotion names a candidate with no record"
    refused = {f.candidate.snapshot_id: f for f in promotion.refused}
    for r in state.samples:
        if r.snapshot_id in refused:
            key = f"{NAME}/promotion/{_id(r)}"
            base = Ref(snapshot_id=seed.snapshot_id, round=0, slot=seed.slot)
            made.append(refused_entry(NAME, key, refused[r.snapshot_id], base, _raw(search, r)))
        elif r.status == "evaluated" and (r.round, r.slot) != (promoted.round, promoted.slot):
            why = (
                f"not promoted: dev score {r.dev_score:.3f} vs {promotion.dev_score:.3f}"
                f" ({r.changed_lines} vs {promoted.changed_lines} lines changed)"
            )
            made.append(_entry(search, f"{NAME}/promotion/{_id(r)}", "reject", r, seed, why))
    name = candidate_name(promoted.round, promoted.slot, search.width)
    why = (
        f"promoted {name}: the best dev score of {len(state.samples)} sample(s) and the seed, "
        f"{promotion.dev_score:.3f} (seed {seed.dev_score:.3f}); ties keep fewer changes"
        + (f"; {len(refused)} ranked above it refused by the trade-off rule" if refused else "")
    )
    made.append(_entry(search, f"{NAME}/promotion", "adopt", promoted, seed, why, EXPERIMENT))
    return made


def _id(r: SampleRecord) -> str:
    return f"r{r.round:03d}" if r.slot == "c0" else f"r{r.round:03d}.{r.slot}"


def _entry(search, id_, decision, r: SampleRecord, seed: SampleRecord, reason, scope="search"):
    return Decision(
        id=id_,
        decision=decision,
        algorithm=NAME,
        scope=scope,
        candidate=Ref(snapshot_id=r.snapshot_id, round=r.round, slot=r.slot),
        baseline=Ref(snapshot_id=seed.snapshot_id, round=0, slot=seed.slot),
        reason=reason,
        evidence=_evidence(search, r, seed),
        eval_set=r.eval_set,
        raw=_raw(search, r),
    )


def _raw(search: BestOfN, r: SampleRecord) -> list[str]:
    layout = search.layout
    paths = (layout.round(r.round, r.slot), layout.rollouts(r.round, r.slot))
    return raw_paths(search.experiment.paths.root, *paths)


def _evidence(search: BestOfN, r: SampleRecord, seed: SampleRecord) -> Evidence:
    if r.status != "evaluated":
        return Evidence(not_compared=f"nothing was evaluated: {r.reason}")
    if r.round == 0:
        return Evidence(scores={"dev_score": r.dev_score}, not_compared="the seed itself")
    frame = scores_frame(search.round_rollouts(r.round, r.slot))
    base = scores_frame(search.round_rollouts(0))
    return Evidence(
        scores={"dev_score": r.dev_score, "baseline_dev_score": seed.dev_score},
        paired=paired(frame, base).model_dump(mode="json"),
    )
