"""ModularRSI's decisions, derived from its records for the ledger (`decisions.ledger`).

- A branch step `accepted`: `adopt` for the branch (scope `branch:<module>`): the candidate
  is the version the branch continues from. `rejected`: `reject`, with the gate verdicts up to
  the one that failed. Its evaluation set is the step's batch. A branch candidate runs on one
  task only (the execution gate), so there is no task set to compare it on: its evidence is
  the gates, and the batch score of the version it came from.
- An integration round `accepted`: `adopt` for the integration, with its full check; a repair
  is compared with the previous accepted merge on the whole evolution set. `rejected`:
  `reject` with the gates.
- The promotion: `adopt` of the promoted version as the experiment's baseline, compared with
  the seed on the whole evolution set (the promotion runs the seed there once for it:
  `baseline-check.jsonl`, one rollout per task as the full check).

`no_change` (no candidate was made) and `aborted` steps decide nothing; their records keep why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.modular_rsi.modules import INTEGRATION
from flashrsi_dagster.algorithms.modular_rsi.plan import State
from flashrsi_dagster.algorithms.modular_rsi.records import StepRecord
from flashrsi_dagster.contamination import ContentVerdict
from flashrsi_dagster.decisions.adoption import refused_entry
from flashrsi_dagster.decisions.compare import ComparisonError, compare
from flashrsi_dagster.decisions.ledger import (
    EXPERIMENT,
    Decision,
    Evidence,
    Ref,
    eval_set_version,
    raw_paths,
)
from flashrsi_dagster.experiment.keys import candidate_key
from flashrsi_dagster.records import read_record
from flashrsi_dagster.rollouts.engine import final_trajectories
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.stats.behaviour import behaviour

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.modular_rsi.run import ModularRSI

NAME = "modular_rsi"
PARTS = ("rollouts", "findings", "analysis", "worker", "edit", "content", "review")


def decisions(a: ModularRSI, state: State) -> list[Decision]:
    made = []
    for slot in (*a.modules, INTEGRATION):
        for record in state.branch(slot):
            if record.status in ("accepted", "rejected"):
                made.append(_step(a, state, record))
    if state.promotion is not None:
        made += [*_refused(a, state), _promotion(a, state)]
    return made


def promoted_from(state: State, snapshot_id: str) -> StepRecord | None:
    """The integration round whose full check ran the version `snapshot_id`, if any."""
    rounds = state.branch(INTEGRATION)
    return next((r for r in rounds if r.check and r.current_id == snapshot_id), None)


def checked_eval_set(a: ModularRSI, source: StepRecord | None) -> str:
    """The evaluation set a version's full check ran (the whole evolution set)."""
    checked = source.check.eval_set if source is not None and source.check else None
    return checked or eval_set_version("train", (t.id for t in a.splits.train))


def _refused(a: ModularRSI, state: State) -> list[Decision]:
    """The adoptions the host refused at the promotion (`decisions.adoption`)."""
    assert state.promotion is not None
    made = []
    for n, found in enumerate(state.promotion.refused, start=1):
        raw = [a.layout.promotion, a.layout.baseline_check]
        source = promoted_from(state, found.candidate.snapshot_id or "")
        if source is not None:
            raw.insert(1, a.layout.check(source.round))
        made.append(
            refused_entry(
                NAME,
                f"{NAME}/promotion/refused/{n}",
                found,
                Ref(snapshot_id=a.seed().id, round=0),
                raw_paths(a.experiment.paths.root, *raw),
            )
        )
    return made


def _raw(a: ModularRSI, record: StepRecord) -> list[str]:
    layout, slot, k = a.layout, record.slot, record.round
    paths = [layout.step(slot, k), *(layout.step(slot, k, p) for p in PARTS)]
    paths += [*layout.malformed(slot, k), *layout.repairs(slot, k)]
    paths += [layout.rollouts(slot, k), layout.execution(slot, k), layout.check(k)]
    if slot != INTEGRATION:
        paths.pop()  # an integration round's check only
    unique = list(dict.fromkeys(paths))
    return raw_paths(a.experiment.paths.root, *unique)


def _step(a: ModularRSI, state: State, record: StepRecord) -> Decision:
    integration = record.slot == INTEGRATION
    evidence = Evidence(gates=[g.model_dump(mode="json") for g in record.gates])
    if any(g.name == "content" and not g.passed for g in record.gates):
        content = read_record(a.layout.step(record.slot, record.round, "content"), ContentVerdict)
        evidence.contamination = content.model_dump(mode="json")
    if integration:
        checked = record.check.eval_set if record.check is not None else None
        eval_set = checked or eval_set_version("train", (t.id for t in a.splits.train))
        if record.check is not None:
            evidence.scores = {
                "full_check_score": record.check.score,
                "runtime_errors": len(record.check.runtime_errors),
            }
            _compare_with_previous_merge(a, state, record, evidence, eval_set)
        else:
            evidence.not_compared = "the candidate failed a gate before the full check"
    else:
        eval_set = record.eval_set or eval_set_version("train", record.tasks)
        batch = a.step_rollouts(record.slot, record.round)
        if batch:
            evidence.scores = {
                "batch_score_of_baseline": sum(t.score or 0.0 for t in batch) / len(batch)
            }
        evidence.not_compared = (
            "a branch candidate runs on one task of its batch only (the execution gate): "
            "there is no task set to compare it on; the promotion compares the integrated "
            "version with the seed"
        )
    return Decision(
        id=f"{NAME}/{candidate_key(record.round, record.slot)}",
        decision="adopt" if record.status == "accepted" else "reject",
        algorithm=NAME,
        scope="integration" if integration else f"branch:{record.slot}",
        candidate=Ref(
            snapshot_id=record.candidate_id,
            round=record.round,
            slot=record.slot,
            produced_by=record.produced_by,
        ),
        baseline=Ref(snapshot_id=record.parent_id),
        reason=record.reason,
        evidence=evidence,
        eval_set=eval_set,
        raw=_raw(a, record),
    )


def previous_merge(state: State, record: StepRecord) -> StepRecord | None:
    """The last accepted, checked integration round before `record`'s, if any."""
    earlier = [
        r
        for r in state.branch(INTEGRATION)
        if r.round < record.round and r.status == "accepted" and r.check is not None
    ]
    return earlier[-1] if earlier else None


def _compare_with_previous_merge(a, state: State, record: StepRecord, evidence, eval_set):
    previous = previous_merge(state, record)
    if previous is None:
        evidence.not_compared = "the merge is compared with the seed at the promotion"
        return
    merged, before = (
        a.step_rollouts(INTEGRATION, record.round),
        a.step_rollouts(INTEGRATION, previous.round),
    )
    evidence.behaviour = behaviour_evidence(a, merged, before)
    try:
        evidence.comparison = compare(
            merged, before, a.experiment.config.comparison, eval_set=eval_set
        )
    except ComparisonError as exc:
        evidence.not_compared = f"not comparable with integration round {previous.round}: {exc}"


def _promotion(a: ModularRSI, state: State) -> Decision:
    promotion = state.promotion
    assert promotion is not None
    seed = a.seed().id
    source = promoted_from(state, promotion.snapshot_id)
    eval_set = checked_eval_set(a, source)
    evidence = Evidence()
    raw = [a.layout.promotion]
    if promotion.snapshot_id == seed:
        evidence.not_compared = "the promoted version is the seed, the baseline itself"
        judged = ""
    elif source is None:
        evidence.not_compared = "the promoted version has no full check to compare"
        judged = ""
    else:
        assert source.check is not None
        baseline = final_trajectories(
            RolloutRecord(a.layout.baseline_check), a.settings.max_infra_reruns
        )
        evidence.scores = {"full_check_score": source.check.score}
        try:
            promoted = a.step_rollouts(INTEGRATION, source.round)
            evidence.behaviour = behaviour_evidence(a, promoted, baseline)
            evidence.comparison = compare(
                promoted,
                baseline,
                a.experiment.config.comparison,
                eval_set=eval_set,
            )
            evidence.scores["baseline_full_check_score"] = evidence.comparison.baseline.score
        except ComparisonError as exc:
            evidence.not_compared = f"not comparable with the seed's check: {exc}"
        raw += [a.layout.check(source.round), a.layout.baseline_check]
        judged = evidence.comparison.line() if evidence.comparison else evidence.not_compared
        judged = f"; against the seed on every evolution task: {judged}"
    return Decision(
        id=f"{NAME}/promotion",
        decision="adopt",
        algorithm=NAME,
        scope=EXPERIMENT,
        candidate=Ref(
            snapshot_id=promotion.snapshot_id,
            round=source.round if source else None,
            slot=INTEGRATION if source else None,
        ),
        baseline=Ref(snapshot_id=seed, round=0),
        reason=f"promoted ({promotion.source}): {promotion.reason}{judged}",
        evidence=evidence,
        eval_set=eval_set,
        raw=raw_paths(a.experiment.paths.root, *raw),
    )


def behaviour_evidence(a: ModularRSI, candidate, baseline) -> dict:
    """The behaviour signal of a checked version against the one it is compared with."""
    return behaviour(candidate, baseline, a.experiment.config.behaviour).model_dump(mode="json")
