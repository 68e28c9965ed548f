"""Paired statistics: d_i = candidate_i - parent_i, se = stdev(d)/√n, z = lift/se."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from scipy import stats as scipy_stats

from flashrsi_dagster.records import ErrorInfo, Status, Trajectory
from flashrsi_dagster.rollouts.scores import scores_frame
from flashrsi_dagster.stats import (
    difference_tests,
    paired,
    per_task_table,
    task_rates,
    to_markdown,
)

UNDEFINED = ("std_difference", "standard_error", "z", "p_value", "p_value_t")


def _scores(rates: dict[str, list[float]]) -> pd.DataFrame:
    """A minimal scores table: one row per attempt of each task."""
    rows = [
        {"task_id": task, "attempt": attempt, "score": score}
        for task, scores in rates.items()
        for attempt, score in enumerate(scores)
    ]
    return pd.DataFrame(rows, columns=["task_id", "attempt", "score"])


def _pair(candidate: dict[str, list[float]], parent: dict[str, list[float]], **kwargs):
    return paired(_scores(candidate), _scores(parent), **kwargs)


def test_differences_1_0_0_1_give_the_hand_computed_statistics():
    # d = [1, 0, 0, 1]: lift 0.5; var = 4 * 0.25 / 3 = 1/3; se = √(1/3) / 2; z = √3.
    stats = _pair(
        candidate={"a": [1], "b": [1], "c": [0], "d": [1]},
        parent={"a": [0], "b": [1], "c": [0], "d": [0]},
    )

    assert stats.n == 4
    assert stats.mean_candidate == 0.75
    assert stats.mean_parent == 0.25
    assert stats.mean_difference == stats.lift == 0.5
    assert stats.std_difference == pytest.approx(math.sqrt(1 / 3))
    assert stats.standard_error == pytest.approx(math.sqrt(1 / 3) / 2)
    assert stats.z == pytest.approx(math.sqrt(3))
    assert (stats.won, stats.lost, stats.tied) == (2, 0, 2)
    assert stats.credited is False
    assert (stats.unpaired_candidate, stats.unpaired_parent) == (0, 0)


def test_p_values_match_scipy_normal_and_paired_t():
    candidate = {"a": [1], "b": [0], "c": [1], "d": [1], "e": [0.5]}
    parent = {"a": [0], "b": [1], "c": [0], "d": [0.5], "e": [0]}
    cand, par = [1, 0, 1, 1, 0.5], [0, 1, 0, 0.5, 0]

    stats = _pair(candidate, parent)
    t_test = scipy_stats.ttest_rel(cand, par)

    assert stats.p_value == pytest.approx(2 * scipy_stats.norm.sf(abs(stats.z)))
    assert stats.p_value_t == pytest.approx(t_test.pvalue)
    # The paired t statistic is the same number as z; only the reference distribution differs.
    assert stats.z == pytest.approx(t_test.statistic)
    assert stats.p_value < stats.p_value_t


def test_credited_at_exactly_two_sigma_and_not_just_below():
    # Three wins and six ties: lift 1/3, stdev 1/2, se 1/6, z exactly 2.
    candidate = {f"t{i}": [1 if i < 3 else 0] for i in range(9)}
    parent = {f"t{i}": [0] for i in range(9)}

    stats = _pair(candidate, parent)

    assert (stats.std_difference, stats.standard_error) == (0.5, pytest.approx(1 / 6))
    assert stats.z == 2.0
    assert stats.credited is True
    assert _pair(candidate, parent, sigma=2.0001).credited is False
    assert _pair(candidate, parent, sigma=1.0).credited is True
    # The 2-sigma label is generous at small n: three wins in nine tasks, exactly, are p = 1/4.
    assert stats.p_value_sign == stats.p_value_permutation == 0.25
    assert stats.verdict == "indecisive"


def test_losses_lower_z_and_are_never_credited():
    stats = _pair(candidate={"a": [0], "b": [0], "c": [1]}, parent={"a": [1], "b": [1], "c": [1]})

    assert stats.lift == pytest.approx(-2 / 3)
    assert stats.z < 0
    assert (stats.won, stats.lost, stats.tied) == (0, 2, 1)
    assert stats.credited is False


def test_attempts_are_averaged_per_task_before_pairing():
    # Candidate rates: a = 1/2, b = 1; parent rates: a = 0, b = 1/4. d = [1/2, 3/4].
    stats = _pair(
        candidate={"a": [1, 0], "b": [1, 1, 1]},
        parent={"a": [0], "b": [1, 0, 0, 0]},
    )

    assert stats.n == 2
    assert stats.mean_candidate == 0.75
    assert stats.mean_parent == 0.125
    assert stats.lift == 0.625
    assert stats.std_difference == pytest.approx(np.std([0.5, 0.75], ddof=1))


def test_tasks_missing_from_either_side_are_reported_not_scored_zero():
    stats = _pair(
        candidate={"a": [1], "b": [1], "c": [0]},
        parent={"b": [0], "c": [0], "d": [1], "e": [1]},
    )

    assert stats.n == 2
    assert stats.unpaired_candidate == 1
    assert stats.unpaired_parent == 2
    # Only b and c count: a zero for the missing side would change both means.
    assert (stats.mean_candidate, stats.mean_parent) == (0.5, 0.0)


def test_a_task_with_an_unscored_attempt_has_no_rate_and_goes_unpaired():
    candidate = _scores({"a": [1, 1], "b": [1]})
    candidate.loc[1, "score"] = np.nan

    assert list(task_rates(candidate).index) == ["b"]
    stats = paired(candidate, _scores({"a": [0], "b": [0]}))
    assert (stats.n, stats.unpaired_candidate, stats.unpaired_parent) == (1, 0, 1)


def test_one_paired_task_has_a_lift_but_no_spread():
    stats = _pair(candidate={"a": [1]}, parent={"a": [0]})

    assert stats.n == 1
    assert stats.lift == 1.0
    assert all(getattr(stats, name) is None for name in UNDEFINED)
    assert stats.credited is False
    assert stats.verdict == "indecisive"


def test_no_paired_tasks_leaves_every_statistic_undefined():
    stats = _pair(candidate={"a": [1]}, parent={"b": [0]})

    assert stats.n == 0
    assert stats.mean_candidate is stats.mean_parent is stats.lift is None
    assert all(getattr(stats, name) is None for name in UNDEFINED)
    assert (stats.won, stats.lost, stats.tied) == (0, 0, 0)
    assert stats.credited is False
    assert stats.p_value_sign is stats.p_value_permutation is stats.permutation_method is None
    assert stats.verdict == "indecisive"


def test_the_same_gain_on_every_task_has_zero_se_and_no_z():
    stats = _pair(candidate={"a": [1], "b": [1], "c": [1]}, parent={"a": [0], "b": [0], "c": [0]})

    assert (stats.lift, stats.std_difference, stats.standard_error) == (1.0, 0.0, 0.0)
    assert stats.z is stats.p_value is stats.p_value_t is None
    assert stats.credited is False
    # ...but winning every task is credited by the small-n verdict.
    assert stats.p_value_sign == stats.p_value_permutation == 0.25
    assert (stats.verdict, stats.verdict_reason) == ("credited", "won every one of the 3 tasks")


def test_identical_tables_have_zero_lift_and_no_z():
    table = {"a": [1, 0], "b": [0.5], "c": [0]}

    stats = _pair(table, table)

    assert (stats.lift, stats.standard_error, stats.z) == (0.0, 0.0, None)
    assert (stats.won, stats.lost, stats.tied) == (0, 0, 3)
    assert (stats.p_value_sign, stats.p_value_permutation) == (None, 1.0)
    assert stats.verdict == "indecisive"


def test_float_rounding_is_neither_a_win_nor_spread():
    # 0.1 + 0.2 averages to 0.15000000000000002, and 0.7 - 0.6 ≠ 0.9 - 0.8 in floats.
    assert _pair(candidate={"a": [0.1, 0.2]}, parent={"a": [0.15]}).tied == 1
    stats = _pair(candidate={"a": [0.7], "b": [0.9]}, parent={"a": [0.6], "b": [0.8]})
    assert stats.standard_error == 0.0
    assert stats.z is None
    assert stats.won == 2


def test_the_small_n_figures_are_those_of_the_per_task_differences():
    candidate = _scores({f"t{i}": [i % 2, 1, (i % 3) / 2] for i in range(12)})
    parent = _scores({f"t{i}": [0, i % 4 == 0, 0.5] for i in range(12)})
    d = per_task_table(candidate, parent).sort_values("task_id")["difference"]

    stats = paired(candidate, parent, alpha=0.01)
    tests = difference_tests(d, alpha=0.01)

    assert stats.p_value_sign == tests.sign.p_value
    assert stats.p_value_permutation == tests.permutation.p_value
    assert (stats.permutation_method, stats.permutation_resamples) == ("exact", 2**12)
    assert stats.permutation_seed is None
    assert stats.p_value_t == tests.t.p_value
    assert stats.z == tests.t.statistic
    assert (stats.alpha, stats.verdict, stats.verdict_reason) == (0.01, tests.verdict, tests.reason)


def test_above_20_tasks_the_permutation_p_is_sampled_as_asked():
    candidate = _scores({f"t{i:02}": [i % 3 != 0] for i in range(25)})
    parent = _scores({f"t{i:02}": [i % 2] for i in range(25)})

    stats = paired(candidate, parent, draws=5_000, seed=3)

    assert (stats.permutation_method, stats.permutation_resamples) == ("monte_carlo", 5_000)
    assert stats.permutation_seed == 3
    assert stats == paired(candidate, parent, draws=5_000, seed=3)
    assert "(Monte Carlo, 5000 draws, seed 3)" in to_markdown(stats)


def test_sigma_must_be_positive():
    with pytest.raises(ValidationError):
        _pair(candidate={"a": [1]}, parent={"a": [0]}, sigma=0)


def _trajectory(task_id: str, snapshot: str, status: Status, score: float | None, attempt=0):
    infra = status == Status.INFRA_ERROR
    return Trajectory(
        task_id=task_id,
        split="dev",
        snapshot_id=snapshot * 40,
        attempt=attempt,
        status=status,
        score=score,
        error=ErrorInfo(type="ConnectionError", message="down") if infra else None,
    )


def test_scores_tables_built_from_trajectories_pair_by_task():
    candidate = scores_frame(
        [
            _trajectory("t1", "c", Status.SUCCESS, 1.0),
            _trajectory("t1", "c", Status.FAILURE, 0.0, attempt=1),
            _trajectory("t2", "c", Status.SUCCESS, 1.0),
            # Lost to infrastructure: the scores table counts it 0, so it is paired, not missing.
            _trajectory("t3", "c", Status.INFRA_ERROR, None),
        ]
    )
    parent = scores_frame(
        [
            _trajectory("t1", "p", Status.FAILURE, 0.0),
            _trajectory("t2", "p", Status.FAILURE, 0.0),
            _trajectory("t3", "p", Status.SUCCESS, 1.0),
            _trajectory("t4", "p", Status.SUCCESS, 1.0),
        ]
    )

    stats = paired(candidate, parent)

    assert (stats.n, stats.unpaired_candidate, stats.unpaired_parent) == (3, 0, 1)
    assert stats.lift == pytest.approx((0.5 + 1.0 - 1.0) / 3)
    assert (stats.won, stats.lost, stats.tied) == (2, 1, 0)


def test_per_task_table_lists_paired_tasks_losses_first():
    table = per_task_table(
        _scores({"a": [1], "b": [1, 0], "c": [0], "x": [1]}),
        _scores({"a": [0], "b": [0.5], "c": [1], "y": [0]}),
    )

    assert list(table.columns) == ["task_id", "parent", "candidate", "difference", "outcome"]
    assert table.to_dict("records") == [
        {"task_id": "c", "parent": 1.0, "candidate": 0.0, "difference": -1.0, "outcome": "lost"},
        {"task_id": "b", "parent": 0.5, "candidate": 0.5, "difference": 0.0, "outcome": "tied"},
        {"task_id": "a", "parent": 0.0, "candidate": 1.0, "difference": 1.0, "outcome": "won"},
    ]


def test_per_task_table_of_nothing_paired_is_empty_with_the_columns():
    table = per_task_table(_scores({"a": [1]}), _scores({}))

    assert table.empty
    assert list(table.columns) == ["task_id", "parent", "candidate", "difference", "outcome"]


def test_markdown_shows_the_headline_numbers():
    stats = _pair(
        candidate={"a": [1], "b": [1], "c": [0], "d": [1]},
        parent={"a": [0], "b": [1], "c": [0], "d": [0], "e": [1]},
    )

    text = to_markdown(stats)

    assert text.startswith("| statistic | value |\n| --- | --- |\n")
    assert "| lift | +0.500 |" in text
    assert "| z | 1.73 (not credited at z ≥ 2) |" in text
    assert "| parent → candidate | 0.250 → 0.750 |" in text
    assert "| won / lost / tied | 2 / 0 / 2 |" in text
    assert "| paired tasks | 4 |" in text
    assert "| unpaired (candidate / parent) | 0 / 1 |" in text
    assert f"{stats.p_value:.3g} / {stats.p_value_t:.3g}" in text
    assert "| p (sign / permutation) | 0.5 / 0.5 (exact, 2^4 sign flips) |" in text
    assert "| verdict | indecisive at alpha = 0.05: permutation p 0.5 > 0.05 |" in text


def test_markdown_shows_undefined_values_as_n_a():
    text = to_markdown(_pair(candidate={"a": [1]}, parent={"a": [0]}))

    assert "| z | n/a (not credited at z ≥ 2) |" in text
    assert "| p (normal / paired t) | n/a / n/a |" in text
    assert "| std / se of differences | n/a / n/a |" in text
    assert "| p (sign / permutation) | 1 / 1 (exact, 2^1 sign flips) |" in text
    assert "| verdict | indecisive at alpha = 0.05: 1 paired task(s): fewer than 2" in text
