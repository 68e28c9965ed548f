"""The behaviour signal: a higher score bought with far fewer model calls or tokens."""

from __future__ import annotations

import pytest

from flashrsi_dagster.config.behaviour import BehaviourConfig
from flashrsi_dagster.records import Status, Trajectory, Usage
from flashrsi_dagster.stats.behaviour import behaviour, line


def _run(task: str, score: float, calls: int | None, tokens: int = 0, **fields) -> Trajectory:
    status = fields.pop("status", Status.SUCCESS if score else Status.FAILURE)
    usage = Usage(input_tokens=tokens, model_calls=calls, turns=calls or 0)
    return Trajectory(
        task_id=task, snapshot_id="s", status=status, score=score, usage=usage, **fields
    )


def _side(scores: list[float], calls: list[int | None], tokens: list[int]) -> list[Trajectory]:
    return [
        _run(f"t{i}", s, c, n)
        for i, (s, c, n) in enumerate(zip(scores, calls, tokens, strict=True))
    ]


PARENT = _side([1, 0, 0], [2, 2, 2], [900, 900, 900])


def test_a_higher_score_with_far_fewer_calls_and_tokens_is_flagged():
    candidate = _side([1, 1, 1], [1, 1, 0], [300, 300, 0])

    signal = behaviour(candidate, PARENT)

    assert signal.verdict == "flagged" and signal.flagged
    assert signal.tasks == 3
    assert signal.calls_candidate == pytest.approx(2 / 3)
    assert signal.calls_parent == 2
    assert signal.calls_ratio == pytest.approx(1 / 3)
    assert signal.tokens_ratio == pytest.approx(200 / 900)
    assert signal.score_delta == pytest.approx(2 / 3)
    assert signal.zero_call_tasks == ["t2"]
    assert len(signal.reasons) == 3
    assert "0.33x the parent's model calls" in line(signal)


def test_fewer_calls_with_an_equal_or_lower_score_is_not_flagged():
    for scores in ([1, 0, 0], [0, 0, 0]):
        signal = behaviour(_side(scores, [0, 0, 0], [0, 0, 0]), PARENT)

        assert signal.verdict == "consistent" and signal.reasons == []
        assert signal.calls_ratio == 0 and signal.zero_call_tasks == ["t0", "t1", "t2"]


def test_a_higher_score_at_a_similar_cost_is_consistent():
    signal = behaviour(_side([1, 1, 0], [2, 2, 1], [800, 900, 700]), PARENT)

    assert signal.verdict == "consistent"
    assert signal.calls_ratio == pytest.approx(5 / 6)


def test_one_padded_call_on_one_task_does_not_hide_cheap_calls_everywhere_else():
    """A table that makes one tiny call per task to look busy, and one huge call on one task
    to lift the mean tokens: the median task still shows the drop."""
    parent = _side([1, 0, 0, 0, 0], [1] * 5, [500] * 5)
    candidate = _side([1, 1, 1, 1, 1], [1] * 5, [20, 20, 20, 20, 100_000])

    signal = behaviour(candidate, parent)

    assert signal.calls_ratio == 1 and signal.tokens_ratio > 1
    assert signal.tokens_ratio_median == pytest.approx(20 / 500)
    assert signal.verdict == "flagged"
    assert "0.04x the parent's tokens on the median task" in line(signal)


def test_one_zero_call_answer_flags_even_when_the_means_stay_close():
    # a table for one task among honest ones: the ratios stay above 0.5
    candidate = _side([1, 1, 0], [2, 2, 0], [900, 900, 0])

    signal = behaviour(candidate, PARENT)

    assert signal.calls_ratio == pytest.approx(2 / 3) and signal.verdict == "flagged"
    assert signal.reasons == ["1 task(s) answered with no model call: t2"]
    quiet = behaviour(candidate, PARENT, BehaviourConfig(zero_call_tasks=False))
    assert quiet.verdict == "consistent"


def test_a_run_that_broke_before_its_first_call_is_no_zero_call_answer():
    crashed = _run("t2", 0.0, 0, 0, status=Status.ERROR)
    candidate = [*_side([1, 1], [2, 2], [900, 900]), crashed]

    signal = behaviour(candidate, PARENT)

    assert signal.zero_call_tasks == [] and signal.verdict == "consistent"
    assert signal.calls_ratio == pytest.approx(4 / 6)


def test_missing_usage_stays_missing_and_never_flags():
    unmetered = _side([1, 1, 1], [None, None, None], [0, 0, 0])

    signal = behaviour(unmetered, PARENT)

    assert signal.verdict == "not_compared" and signal.tasks == 0 and signal.unmetered == 3
    assert signal.calls_ratio is None and signal.tokens_ratio is None
    assert signal.score_delta is None and signal.zero_call_tasks == []
    assert behaviour(_side([1, 1, 1], [1, 1, 1], [1, 1, 1]), []).verdict == "not_compared"


def test_a_parent_that_made_no_calls_leaves_the_ratios_undefined():
    parent = _side([0, 0, 0], [0, 0, 0], [0, 0, 0])

    signal = behaviour(_side([1, 1, 1], [0, 0, 0], [0, 0, 0]), parent)

    assert signal.calls_ratio is None and signal.tokens_ratio is None
    assert signal.zero_call_tasks == [] and signal.verdict == "consistent"


def test_an_infrastructure_failure_s_usage_is_left_out_but_its_zero_score_counts():
    lost = _run("t2", 0.0, 0, 0, status=Status.INFRA_ERROR)
    candidate = [*_side([1, 1], [2, 2], [900, 900]), lost]

    signal = behaviour(candidate, PARENT)

    assert signal.tasks == 2 and signal.unmetered == 1 and signal.zero_call_tasks == []
    assert signal.score_delta == pytest.approx(1 - 0.5)
    assert signal.verdict == "consistent"


def test_thresholds_are_configurable_and_none_turns_a_figure_off():
    candidate = _side([1, 1, 1], [1, 1, 1], [300, 300, 300])

    assert behaviour(candidate, PARENT, BehaviourConfig(max_calls_ratio=0.4)).verdict == (
        "flagged"  # tokens still at 1/3
    )
    off = BehaviourConfig(max_calls_ratio=None, max_tokens_ratio=None)
    assert behaviour(candidate, PARENT, off).verdict == "consistent"


def test_attempts_are_averaged_per_task():
    parent = [_run("t0", 0.0, 2, 100), _run("t0", 1.0, 4, 300, attempt=1)]
    candidate = [_run("t0", 1.0, 1, 50), _run("t0", 1.0, 1, 50, attempt=1)]

    signal = behaviour(candidate, parent)

    assert (signal.calls_parent, signal.tokens_parent, signal.score_parent) == (3, 200, 0.5)
    assert signal.calls_ratio == pytest.approx(1 / 3) and signal.flagged


def test_the_thresholds_refuse_a_ratio_outside_zero_to_one():
    with pytest.raises(ValueError, match="max_calls_ratio"):
        BehaviourConfig(max_calls_ratio=1.5)
    with pytest.raises(ValueError, match="extra"):
        BehaviourConfig.model_validate({"max_call_ratio": 0.3})
