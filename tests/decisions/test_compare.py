"""Candidate vs baseline on one fixed task set, judged by the trade-off rule declared in the
config: every metric, failure modes by class, refusals of unlike sets, and the rule's verdicts."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from flashrsi_dagster.config import load_config
from flashrsi_dagster.config.comparison import ComparisonConfig
from flashrsi_dagster.decisions import ComparisonError, compare, eval_set_version
from flashrsi_dagster.experiment.identity import fingerprint, normalised
from flashrsi_dagster.records import ErrorInfo, Status, Trajectory, Usage


def run(task: str, ok: bool, *, tools: int = 2, tokens: int = 100, error: str | None = None):
    return Trajectory(
        task_id=task,
        snapshot_id="s",
        split="dev",
        status=Status.SUCCESS if ok else (Status.ERROR if error else Status.FAILURE),
        score=1.0 if ok else 0.0,
        usage=Usage(input_tokens=tokens, output_tokens=tokens // 2, tool_calls=tools),
        duration=1.0,
        error=ErrorInfo(type=error, message="boom") if error else None,
    )


BASELINE = [run("a", True), run("b", False), run("c", False, error="TimeoutError")]
EVAL_SET = eval_set_version("dev", "abc")


def test_every_metric_is_compared_over_the_same_tasks_with_failure_modes_by_class():
    candidate = [run("a", True, tools=3), run("b", True, tools=3), run("c", False, tools=3)]

    result = compare(candidate, BASELINE, ComparisonConfig(), eval_set=EVAL_SET)

    assert result.baseline.success_rate == pytest.approx(1 / 3)
    assert result.candidate.success_rate == pytest.approx(2 / 3)
    assert result.change("tool_calls").relative == pytest.approx(0.5)  # 6 -> 9
    assert result.change("tokens").difference == 0
    assert result.change("wall_time").baseline == 3.0
    assert result.change("cost").difference is None  # unpriced: undefined, never 0
    assert ("error/TimeoutError", 1, 0) in result.failure_modes
    assert ("failure/-", 1, 1) in result.failure_modes
    assert result.verdict == "meets" and result.eval_set == EVAL_SET
    assert result.rule == "score lift >= +0"


def test_different_task_sets_or_budgets_are_refused_not_compared_on_the_overlap():
    with pytest.raises(ComparisonError, match="different task sets"):
        compare([run("a", True), run("x", True)], BASELINE[:2], ComparisonConfig(), eval_set="e")
    twice = [*BASELINE, *BASELINE]
    with pytest.raises(ComparisonError, match="different budgets"):
        compare(twice, BASELINE, ComparisonConfig(), eval_set="e")


def test_the_rule_names_each_broken_clause_and_an_undefined_figure_is_indecisive():
    rule = ComparisonConfig(primary="success_rate", guards={"tool_calls": {"max_increase": 0.2}})
    costly = [run("a", True, tools=3), run("b", True, tools=3), run("c", False, tools=3)]
    cheap_worse = [run("a", False, tools=1), run("b", False, tools=1), run("c", False, tools=1)]
    priced = ComparisonConfig(guards={"cost": {"max_increase": 0.5}})

    violated = compare(costly, BASELINE, rule, eval_set="e")
    worse = compare(cheap_worse, BASELINE, rule, eval_set="e")
    unpriced = compare(BASELINE, BASELINE, priced, eval_set="e")

    assert violated.verdict == "violates"
    assert any("tool_calls +50.0%: BROKEN" in r for r in violated.reasons)
    assert worse.verdict == "violates" and "success_rate" in worse.reasons[0]
    assert unpriced.verdict == "indecisive" and "cost undefined: undefined" in unpriced.reasons[1]


def test_a_rule_is_validated_when_the_config_is_loaded():
    with pytest.raises(ValidationError, match="a cost takes max_increase"):
        ComparisonConfig(guards={"tool_calls": {"max_decrease": 0.1}})
    with pytest.raises(ValidationError, match="exactly one of"):
        ComparisonConfig(guards={"score": {}})
    with pytest.raises(ValidationError):
        ComparisonConfig(primary="tool_calls")


def test_a_declared_rule_is_part_of_the_fingerprint_and_the_default_is_not(config_dir):
    plain = load_config(config_dir / "exp.yaml")
    declared = load_config(config_dir / "exp.yaml", ["--comparison.min_lift", "0.05"])
    stored = normalised(plain)
    older = {k: v for k, v in stored.items() if k != "comparison"}  # before the section existed

    assert fingerprint(older) == fingerprint(stored)
    assert fingerprint(normalised(declared)) != fingerprint(stored)
    assert normalised(declared)["comparison"]["min_lift"] == 0.05


def test_a_side_with_unpriced_rollouts_has_no_cost_total():
    """A failed rollout often has no price; summing the priced ones would make the side that
    failed more look cheaper, so a partly priced side's cost is undefined, never a sum."""
    from flashrsi_dagster.decisions.compare import metrics

    priced = [run(t, True).model_copy(update={"usage": Usage(cost=0.01)}) for t in "abc"]
    assert metrics(priced).cost == pytest.approx(0.03)
    assert metrics([*priced[:2], run("c", False)]).cost is None
