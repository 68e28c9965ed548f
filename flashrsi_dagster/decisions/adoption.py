"""Whether a candidate may be adopted as the experiment's baseline: the host's vetting on every
algorithm's adoption path (seed 003: results are compared by the rule declared before the run,
and the reason to adopt or refuse is recorded).

Each algorithm chooses by its own rule (seeds 000, 001) and lists its choices in its order of
preference, the baseline last. The host compares each with the baseline on the same tasks and
budget (`decisions.compare`) and adopts the first whose comparison does not violate the
declared trade-off rule; under `comparison.on_violation: warn` nothing is refused (the
violation is said in the adoption's reason). A candidate that cannot be compared (other tasks,
another budget, no rollouts) and an `indecisive` verdict refuse nothing: the rule cannot judge
them, and the entry says why there is no comparison.

A refusal is kept in the algorithm's promotion record (`refused`), so the ledger derives it
again like every entry: a `reject` of scope `experiment`, with the reason and the comparison.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.config.comparison import ComparisonConfig
from flashrsi_dagster.decisions.compare import Comparison, ComparisonError, compare
from flashrsi_dagster.decisions.ledger import EXPERIMENT, Decision, Evidence, Ref
from flashrsi_dagster.records import Trajectory


class Refusal(BaseModel):
    """A candidate the host refused to adopt, and the comparison that refused it."""

    model_config = ConfigDict(extra="forbid")

    candidate: Ref
    reason: str
    comparison: Comparison = Field(description="Against the baseline; its verdict `violates`.")


def refusal(
    rule: ComparisonConfig,
    candidate: Ref,
    rollouts: Sequence[Trajectory],
    baseline: Sequence[Trajectory],
    *,
    eval_set: str,
) -> Refusal | None:
    """The refusal of adopting `candidate` (its `rollouts` against the baseline's), or None
    when it may be adopted."""
    if rule.on_violation != "refuse":
        return None
    try:
        comparison = compare(rollouts, baseline, rule, eval_set=eval_set)
    except ComparisonError:
        return None  # not comparable: the adoption's entry says why, the rule cannot judge
    if comparison.verdict != "violates":
        return None
    reason = (
        f"adoption of {candidate_name(candidate)} refused: it violates the declared trade-off "
        f"rule against the baseline: {comparison.line()} (comparison.on_violation: refuse)"
    )
    return Refusal(candidate=candidate, reason=reason, comparison=comparison)


def candidate_name(ref: Ref) -> str:
    where = "" if ref.round is None else f"round {ref.round}, {ref.slot or 'c0'}, "
    return f"{where}snapshot {(ref.snapshot_id or '-')[:12]}"


def first_admitted[C](
    choices: Sequence[C], vet: Callable[[C], Refusal | None]
) -> tuple[C, list[Refusal]]:
    """The first of `choices` (the algorithm's order of preference, the baseline last) whose
    adoption `vet` does not refuse, and the refusals before it."""
    refused: list[Refusal] = []
    for choice in choices:
        found = vet(choice)
        if found is None:
            return choice, refused
        refused.append(found)
    raise ValueError("every choice was refused: the baseline must end the list")


def refused_entry(
    algorithm: str,
    id_: str,
    refused: Refusal,
    baseline: Ref,
    raw: list[str],
    evidence: Evidence | None = None,
) -> Decision:
    """The ledger's `reject` of a refused adoption: the reason, the comparison, the raw
    results (`evidence`: the algorithm's own, to which the comparison is set)."""
    evidence = (evidence or Evidence()).model_copy(update={"comparison": refused.comparison})
    return Decision(
        id=id_,
        decision="reject",
        algorithm=algorithm,
        scope=EXPERIMENT,
        candidate=refused.candidate,
        baseline=baseline,
        reason=refused.reason,
        evidence=evidence,
        eval_set=refused.comparison.eval_set,
        raw=raw,
    )
