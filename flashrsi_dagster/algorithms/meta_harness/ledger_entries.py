"""Meta-Harness's decisions, derived from its records for the ledger (`decisions.ledger`).

- `reject`, as soon as the candidate is recorded: one whose edit was a no-op or refused by the
  snapshot guard (nothing was evaluated; the Worker's trajectory and the edit record are kept).
- At each promotion: `adopt` of the promoted snapshot as the experiment's baseline, and
  `reject` of every other evaluated candidate ("not promoted", with its rank). Each carries
  its dev scores, the paired statistics and the multi-metric comparison against the seed
  (round 0's c0, the experiment's first baseline) on the same dev tasks; another initial
  harness (`initial_harnesses`) is a candidate like any other.

Every entry names its candidate (round and slot); ids are per candidate, so the candidates of
a round, syncing side by side, each add their own once.

An evaluated round is no decision by itself: every candidate stays in the Worker's history
until the promotion chooses. A promotion made again before the sealed test (a round was
re-evaluated) gets entries of its own; the earlier ones stay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.meta_harness.plan import State, candidate_name
from flashrsi_dagster.algorithms.meta_harness.records import EditRecord, RoundRecord
from flashrsi_dagster.contamination import ContentVerdict
from flashrsi_dagster.decisions.adoption import refused_entry
from flashrsi_dagster.decisions.compare import Comparison, ComparisonError, compare
from flashrsi_dagster.decisions.ledger import (
    EXPERIMENT,
    Decision,
    Evidence,
    Ref,
    eval_set_version,
    raw_paths,
)
from flashrsi_dagster.experiment.keys import candidate_key
from flashrsi_dagster.records import read_optional
from flashrsi_dagster.rollouts.scores import scores_frame
from flashrsi_dagster.stats.behaviour import behaviour
from flashrsi_dagster.stats.paired import paired

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness

NAME = "meta_harness"


def decisions(h: MetaHarness, state: State) -> list[Decision]:
    seed = state.round(0)
    if seed is None:
        return []
    rejected = [r for r in state.rounds if r.status == "rejected" or r.improver_failed]
    made = [_rejected_edit(h, r, seed) for r in rejected]
    if state.promotion is not None:
        made += _promotion(h, state, seed)
    return made


def seed_eval_set(seed: RoundRecord, baseline) -> str:
    """The versioned set the seed round ran (`dev/e1`), else a digest of its task ids."""
    return seed.eval_set or eval_set_version("dev", (t.task_id for t in baseline))


def ref(r: RoundRecord, snapshot_id: str | None = None) -> Ref:
    return Ref(
        snapshot_id=snapshot_id or r.snapshot_id,
        round=r.round,
        slot=r.slot,
        produced_by=r.produced_by,
    )


def _raw(h: MetaHarness, r: RoundRecord) -> list[str]:
    layout, k, slot = h.layout, r.round, r.slot
    paths = (layout.round(k, slot), layout.rollouts(k, slot))
    paths += (layout.edit(k, slot), layout.worker(k, slot), layout.content(k, slot))
    return raw_paths(h.experiment.paths.root, *paths)


def _rejected_edit(h: MetaHarness, r: RoundRecord, seed: RoundRecord) -> Decision:
    edit = read_optional(h.layout.edit(r.round, r.slot), EditRecord)
    status = edit.status if edit else "rejected"
    content = read_optional(h.layout.content(r.round, r.slot), ContentVerdict)
    if edit is not None and content is not None and content.contaminated:
        gate, why = "content", "rejected before any evaluation"
        reason = f"the Worker's edit was {why}: {r.reason}"
        contamination = content.model_dump(mode="json")
    elif r.round == 0:  # an initial harness (`initial_harnesses`), no Worker's edit
        gate, why, contamination = "initial", "it repeats an earlier initial harness", None
        reason = f"the initial harness was not evaluated: {r.reason}"
    elif r.improver_failed:
        gate, why, contamination = "improver", "its adopted harness failed as the Worker", None
        reason = (
            f"the adopted harness {r.produced_by[:12]} failed as the Worker: {r.reason}; it "  # type: ignore[index]
            "is passed over as the improver from now on"
        )
    else:
        gate, why, contamination = "commit", f"the edit was {status}", None
        reason = f"the Worker's edit was {status}: {r.reason or 'no reason recorded'}"
    return Decision(
        id=f"{NAME}/{candidate_key(r.round, r.slot)}",
        decision="reject",
        algorithm=NAME,
        scope="search",
        candidate=ref(r, edit.snapshot_id if edit else None),
        baseline=ref(seed),
        reason=reason,
        evidence=Evidence(
            gates=[{"name": gate, "passed": False, "reason": r.reason or status}],
            not_compared=f"nothing was evaluated: {why}",
            contamination=contamination,
        ),
        eval_set=None,
        raw=_raw(h, r),
    )


def _promotion(h: MetaHarness, state: State, seed: RoundRecord) -> list[Decision]:
    promotion = state.promotion
    assert promotion is not None
    basis = f"{NAME}/promotion@{promotion.created.isoformat()}"
    baseline = h.round_rollouts(0)
    eval_set = seed_eval_set(seed, baseline)
    count = len(promotion.ranking)
    chosen = candidate_name(promotion.round, promotion.slot)
    refused = {f.candidate.snapshot_id: f for f in promotion.refused}
    made = []
    for place, (k, sid, score) in enumerate(promotion.ranking, start=1):
        r = _round(state, sid)
        if sid in (seed.snapshot_id, promotion.snapshot_id):  # the baseline, the chosen one
            continue
        key = f"{basis}/{candidate_key(k, r.slot)}"
        if sid in refused:
            evidence = _evidence(h, r, baseline, seed, eval_set)
            made.append(refused_entry(NAME, key, refused[sid], ref(seed), _raw(h, r), evidence))
            continue
        earlier = "round" if k != promotion.round else "slot of the round"
        why = f"ties keep the earlier {earlier}" if score == promotion.dev_score else "lower"
        reason = (
            f"not promoted (ranked {place} of {count}): dev score {score:.3f} vs the "
            f"promoted {chosen}'s {promotion.dev_score:.3f} ({why})"
        )
        evidence = _evidence(h, r, baseline, seed, eval_set)
        made.append(_entry(h, key, "reject", r, sid, seed, reason, evidence, eval_set))
    promoted = _round(state, promotion.snapshot_id)
    by_rule = f"; {len(refused)} ranked above it refused by the trade-off rule" if refused else ""
    if promoted.snapshot_id == seed.snapshot_id:
        beaten = (
            f"the {len(refused)} candidate(s) ranked above the seed were refused by the "
            "trade-off rule"
            if refused
            else f"no candidate beat the seed's dev score {promotion.dev_score:.3f}"
        )
        reason = f"{beaten} over {count} evaluated candidate(s): the seed stays the baseline"
        evidence = Evidence(
            scores={"dev_score": promotion.dev_score},
            not_compared="the promoted snapshot is the baseline itself",
        )
    else:
        evidence = _evidence(h, promoted, baseline, seed, eval_set)
        judged = evidence.comparison.line() if evidence.comparison else evidence.not_compared
        reason = (
            f"promoted: the best dev score, {promotion.dev_score:.3f} (seed "
            f"{seed.dev_score or 0.0:.3f}), of {count} evaluated candidate(s){by_rule}; "
            f"trade-off rule: {judged}"
        )
    sid = promotion.snapshot_id
    adopt = _entry(h, basis, "adopt", promoted, sid, seed, reason, evidence, eval_set, EXPERIMENT)
    adopt.raw.append(h.layout.promotion.relative_to(h.experiment.paths.root).as_posix())
    return [*made, adopt]


def _round(state: State, snapshot_id: str) -> RoundRecord:
    found = state.candidate_of(snapshot_id)
    assert found is not None, f"the promotion ranks {snapshot_id[:12]}, which has no record"
    return found


def _entry(h, id_, decision, r, sid, seed, reason, evidence, eval_set, scope="search"):
    return Decision(
        id=id_,
        decision=decision,
        algorithm=NAME,
        scope=scope,
        candidate=ref(r, sid),
        baseline=ref(seed),
        reason=reason,
        evidence=evidence,
        eval_set=eval_set,
        raw=_raw(h, r),
    )


def _evidence(h: MetaHarness, r: RoundRecord, baseline, seed: RoundRecord, eval_set: str):
    """Round r's dev rollouts against the seed's (its parent): scores, paired statistics,
    all metrics, and the behaviour signal."""
    rollouts = h.round_rollouts(r.round, r.slot)
    scores = {"dev_score": r.dev_score, "baseline_dev_score": seed.dev_score}
    stats = paired(scores_frame(rollouts), scores_frame(baseline))
    signal = behaviour(rollouts, baseline, h.experiment.config.behaviour)
    comparison: Comparison | None = None
    problem = None
    try:
        comparison = compare(rollouts, baseline, h.experiment.config.comparison, eval_set=eval_set)
    except ComparisonError as exc:
        problem = f"not comparable with the seed's dev evaluation: {exc}"
    return Evidence(
        scores=scores,
        paired=stats.model_dump(mode="json"),
        comparison=comparison,
        not_compared=problem,
        behaviour=signal.model_dump(mode="json"),
    )
