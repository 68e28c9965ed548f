"""Tests that hold at small n: the exact sign test, the sign-flip permutation test, the paired t
and the verdict, every figure checked against scipy or a hand-computed table to 1e-9."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from flashrsi_dagster.stats import (
    decide,
    difference_tests,
    paired_t,
    permutation_test,
    sign_test,
)

EXACT = 1e-9


def _scipy_permutation_p(d, n_resamples=np.inf, rng=None) -> float:
    """scipy's paired permutation test of mean(x - y), with y = 0 so that x - y = d."""
    x, y = np.asarray(d, dtype=float), np.zeros(len(d))
    result = scipy_stats.permutation_test(
        (x, y),
        lambda a, b, axis: np.mean(a - b, axis=axis),
        permutation_type="samples",
        alternative="two-sided",
        n_resamples=n_resamples,
        vectorized=True,
        rng=rng,
    )
    return float(result.pvalue)


def _datasets() -> list[list[int]]:
    """Differences of K=3 rates in thirds (numerators here), with ties, losses and wins, for n
    from 2 to 12. scipy gets the numerators: its sums of them are exact, where sums of thirds
    that should be 0 come out as ±1e-16 and split scipy's count (p = 0.906 for a true 1)."""
    rng = np.random.default_rng(12)
    return [list(rng.integers(0, 4, n) - rng.integers(0, 4, n)) for n in range(2, 13)]


# --- the sign test ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wins", "losses", "p"),
    [
        (1, 0, 1.0),  # one task can never be significant
        (3, 0, 0.25),  # 2 / 2^3
        (5, 0, 0.0625),  # 2 / 2^5: still above 0.05
        (6, 0, 0.03125),  # 2 / 2^6
        (4, 1, 0.375),  # 2 * (1 + 5) / 32
        (1, 4, 0.375),
        (8, 2, 0.109375),  # 2 * (1 + 10 + 45) / 1024
        (5, 5, 1.0),
    ],
)
def test_sign_test_matches_the_hand_computed_binomial_table(wins, losses, p):
    d = [1.0] * wins + [-0.5] * losses + [0.0, 0.0]

    result = sign_test(d)

    assert (result.wins, result.losses, result.ties) == (wins, losses, 2)
    assert result.p_value == pytest.approx(p, abs=EXACT)


def test_sign_test_matches_scipy_binomtest_for_every_split_up_to_40_tasks():
    for total in range(1, 41):
        for wins in range(total + 1):
            d = [1.0] * wins + [-1.0] * (total - wins)
            expected = scipy_stats.binomtest(wins, total, 0.5).pvalue
            assert sign_test(d).p_value == pytest.approx(expected, abs=EXACT), (wins, total)


def test_sign_test_drops_ties_and_is_undefined_without_wins_or_losses():
    assert sign_test([0.0, 0.0, 0.0]).p_value is None
    assert sign_test([]).p_value is None
    # Float rounding is a tie, not a win: 0.1 + 0.2 - 0.3 = 5.6e-17.
    assert sign_test([0.1 + 0.2 - 0.3, 1.0]).ties == 1


# --- the permutation test --------------------------------------------------------------------


def test_permutation_test_matches_a_hand_enumeration():
    # d = (0.5, 1, -0.25), T = 1.25. The 8 sign sums: ±1.25, ±1.75, ±0.75, ±0.25; four of
    # them are at least 1.25 in size, so p = 4/8.
    assert permutation_test([0.5, 1.0, -0.25]).p_value == pytest.approx(0.5, abs=EXACT)
    assert permutation_test([1.0, 1.0, 1.0]).p_value == pytest.approx(0.25, abs=EXACT)
    assert permutation_test([1.0] * 5).p_value == pytest.approx(1 / 16, abs=EXACT)
    assert permutation_test([1.0, -1.0]).p_value == 1.0


@pytest.mark.parametrize("thirds", _datasets(), ids=lambda d: f"n{len(d)}")
def test_exact_permutation_test_matches_scipy(thirds):
    result = permutation_test([x / 3 for x in thirds])

    assert result.method == "exact"
    assert result.resamples == 2 ** len(thirds)
    assert result.seed is None
    assert result.statistic == pytest.approx(np.mean(thirds) / 3, abs=EXACT)
    assert result.p_value == pytest.approx(_scipy_permutation_p(thirds), abs=EXACT)


def _exact_by_halves(d: np.ndarray) -> float:
    """An independent exact sign-flip p: the sums of each half's 2^(n/2) sign assignments,
    paired up by sorting (meet in the middle), so n = 26 costs 2 x 8192 sums, not 2^26."""
    if abs(d.sum()) < 1e-9:
        return 1.0  # every assignment is as far from 0 as the observed one
    half = len(d) // 2
    sums = [
        np.array([np.dot(s, part) for s in itertools.product((1.0, -1.0), repeat=len(part))])
        for part in (d[:half], d[half:])
    ]
    left, right = sums[0], np.sort(sums[1])
    t = abs(d.sum()) - 1e-9
    above = len(right) - np.searchsorted(right, t - left, side="left")
    below = np.searchsorted(right, -t - left, side="right")
    return float((above + below).sum()) / 2 ** len(d)


@pytest.mark.parametrize("thirds", _datasets()[-3:], ids=lambda d: f"n{len(d)}")
def test_the_meet_in_the_middle_reference_matches_scipy(thirds):
    assert _exact_by_halves(np.array(thirds, dtype=float)) == pytest.approx(
        _scipy_permutation_p(thirds), abs=EXACT
    )


def test_exact_permutation_test_at_20_tasks_matches_the_reference():
    # scipy takes 8 s for 2^20 assignments; the reference, checked against scipy above, 0.1 s.
    thirds = np.random.default_rng(20).integers(-3, 4, 20)

    result = permutation_test(thirds / 3)

    assert (result.method, result.resamples) == ("exact", 2**20)
    assert result.p_value == pytest.approx(_exact_by_halves(thirds / 3), abs=EXACT)


def test_monte_carlo_above_20_tasks_is_seeded_deterministic_and_near_the_exact_p():
    d = np.random.default_rng(26).integers(-3, 4, 26) / 3
    d[0] = 1.0  # so that the total is not 0

    first = permutation_test(d)
    again = permutation_test(d)
    other_seed = permutation_test(d, seed=1)
    exact = _exact_by_halves(d)

    assert (first.method, first.resamples, first.seed) == ("monte_carlo", 100_000, 0)
    assert first == again
    assert other_seed.seed == 1 and other_seed.p_value != first.p_value
    # Within five standard errors of the exact p (the Monte Carlo p estimates it).
    se = math.sqrt(exact * (1 - exact) / first.resamples)
    assert abs(first.p_value - exact) < 5 * se
    assert abs(other_seed.p_value - exact) < 5 * se
    # scipy's own Monte Carlo estimate of the same p agrees as closely.
    assert abs(_scipy_permutation_p(d, 100_000, np.random.default_rng(0)) - exact) < 5 * se


def test_monte_carlo_p_counts_the_observed_assignment_so_is_never_zero():
    result = permutation_test([1.0] * 40, draws=999)

    # No random assignment of 40 signs reaches ±40 (odds 2^-39): p = (1 + 0) / (999 + 1).
    assert result.p_value == pytest.approx(1 / 1000, abs=EXACT)


def test_the_exact_limit_and_the_draws_are_parameters():
    d = [1.0, 0.5, -1 / 3, 2 / 3, 1.0, 0.0, 1 / 3, -1.0]

    exact = permutation_test(d)
    sampled = permutation_test(d, exact_max_n=4, draws=50_000, seed=7)

    assert (sampled.method, sampled.resamples, sampled.seed) == ("monte_carlo", 50_000, 7)
    assert abs(sampled.p_value - exact.p_value) < 0.01
    with pytest.raises(ValueError, match="draws"):
        permutation_test(d, exact_max_n=4, draws=0)
    with pytest.raises(ValueError, match="exact_max_n"):
        permutation_test(d, exact_max_n=64)  # 2^64 assignments: never


# --- the paired t ----------------------------------------------------------------------------


@pytest.mark.parametrize("thirds", _datasets(), ids=lambda d: f"n{len(d)}")
def test_paired_t_matches_scipy_ttest_1samp(thirds):
    d = [x / 3 for x in thirds]
    result = paired_t(d)
    expected = scipy_stats.ttest_1samp(d, 0.0)

    assert result.df == len(d) - 1
    if np.std(d) == 0:  # scipy says nan or ±inf; we say undefined
        assert result.statistic is result.p_value is None
        return
    assert result.statistic == pytest.approx(expected.statistic, abs=EXACT)
    assert result.p_value == pytest.approx(expected.pvalue, abs=EXACT)
    assert result.std == pytest.approx(np.std(d, ddof=1), abs=EXACT)


def test_paired_t_of_differences_is_scipy_ttest_rel_of_the_two_sides():
    candidate = np.array([1, 2 / 3, 1, 1 / 3, 0, 1, 2 / 3])
    parent = np.array([1 / 3, 2 / 3, 0, 1 / 3, 1 / 3, 2 / 3, 0])

    result = paired_t(candidate - parent)
    expected = scipy_stats.ttest_rel(candidate, parent)

    assert result.statistic == pytest.approx(expected.statistic, abs=EXACT)
    assert result.p_value == pytest.approx(expected.pvalue, abs=EXACT)


def test_paired_t_is_undefined_below_two_tasks_and_without_spread():
    assert paired_t([]).mean is None
    one = paired_t([0.5])
    assert (one.mean, one.std, one.statistic, one.df, one.p_value) == (0.5, None, None, None, None)
    same = paired_t([1.0, 1.0, 1.0])
    assert (same.std, same.standard_error, same.statistic, same.p_value) == (0.0, 0.0, None, None)


# --- the verdict, case by case ---------------------------------------------------------------


def test_a_candidate_that_wins_every_task_is_credited_though_no_test_is_significant():
    # The same gain everywhere: no spread, so no t (and no z); the exact tests say 2/2^5.
    result = difference_tests([1.0] * 5)

    assert result.t.statistic is None
    assert result.sign.p_value == pytest.approx(0.0625, abs=EXACT)
    assert result.permutation.p_value == pytest.approx(0.0625, abs=EXACT)
    assert (result.verdict, result.reason) == ("credited", "won every one of the 5 tasks")
    assert difference_tests([0.5, 1 / 3]).verdict == "credited"


def test_a_candidate_that_loses_every_task_regressed():
    assert difference_tests([-1.0, -1 / 3, -2 / 3]).verdict == "regressed"


def test_all_tied_is_indecisive_with_the_sign_test_and_t_undefined():
    result = difference_tests([0.0] * 6)

    assert result.sign.p_value is None
    assert result.t.statistic is None
    assert result.permutation.p_value == 1.0 == _scipy_permutation_p([0.0] * 6)
    assert result.verdict == "indecisive"


def test_one_task_is_indecisive_even_when_won():
    result = difference_tests([1.0])

    assert result.t.statistic is result.t.p_value is None
    assert result.sign.p_value == 1.0
    assert result.verdict == "indecisive"
    assert "fewer than 2" in result.reason


def test_no_tasks_leave_every_figure_undefined_and_the_verdict_indecisive():
    result = difference_tests([])

    assert result.n == 0
    assert result.sign.p_value is result.permutation.p_value is result.t.p_value is None
    assert result.permutation.statistic is result.t.mean is None
    assert (result.permutation.method, result.permutation.resamples) == (None, 0)
    assert result.verdict == "indecisive"


def test_a_nan_difference_makes_every_figure_undefined_and_is_counted():
    # Four wins and one unscored task: dropping it would credit a candidate on what it hid.
    result = difference_tests([1.0, 1.0, float("nan"), 1.0, 1.0])

    assert (result.n, result.nan) == (5, 1)
    assert result.sign.p_value is None
    assert result.permutation.p_value is result.permutation.statistic is None
    assert result.t.mean is result.t.statistic is result.t.p_value is None
    assert result.verdict == "indecisive"
    assert result.reason.startswith("1 of 5 differences are NaN")


def test_mixed_differences_are_credited_regressed_or_indecisive_by_the_permutation_p():
    strong = [1.0, 1.0, 2 / 3, 1.0, 1 / 3, 1.0, 2 / 3, 1.0, -1 / 3, 1.0, 0.0]
    weak = [1.0, -1.0, 1 / 3, 0.0, -1 / 3, 2 / 3]

    up = difference_tests(strong)
    down = difference_tests([-x for x in strong])
    unsure = difference_tests(weak)

    assert up.permutation.p_value == pytest.approx(_scipy_permutation_p(strong), abs=EXACT)
    assert up.permutation.p_value <= 0.05
    assert (up.verdict, down.verdict) == ("credited", "regressed")
    assert unsure.permutation.p_value > 0.05
    assert unsure.verdict == "indecisive"
    # alpha is a parameter: the same data at a stricter level.
    assert difference_tests(strong, alpha=up.permutation.p_value / 2).verdict == "indecisive"


def test_three_wins_and_six_ties_are_2_sigma_but_not_credited_at_small_n():
    # The seed's z is exactly 2 here (tests/stats/test_paired.py); the exact tests say 1/4.
    result = difference_tests([1.0, 1.0, 1.0] + [0.0] * 6)

    assert result.t.statistic == pytest.approx(2.0, abs=EXACT)
    assert result.sign.p_value == pytest.approx(0.25, abs=EXACT)
    assert result.permutation.p_value == pytest.approx(0.25, abs=EXACT)
    assert result.verdict == "indecisive"


@pytest.mark.parametrize(
    ("counts", "lift", "p", "verdict"),
    [
        ((0, 0, 0, 0), None, None, "indecisive"),  # n = 0
        ((1, 0, 1, 0), 1.0, 1.0, "indecisive"),  # n = 1, won
        ((4, 1, 3, 0), None, None, "indecisive"),  # a NaN
        ((3, 0, 3, 0), 1.0, 0.25, "credited"),  # every task won
        ((3, 0, 0, 3), -1.0, 0.25, "regressed"),  # every task lost
        ((9, 0, 7, 1), 0.4, 0.05, "credited"),  # p == alpha counts
        ((9, 0, 1, 7), -0.4, 0.01, "regressed"),
        ((9, 0, 5, 3), 0.1, 0.06, "indecisive"),
        ((9, 0, 0, 0), 0.0, 1.0, "indecisive"),  # all tied
        ((9, 0, 4, 4), 0.0, 0.01, "indecisive"),  # no lift, whatever p says
    ],
)
def test_decide_follows_its_rules_in_order(counts, lift, p, verdict):
    n, nan, wins, losses = counts

    got, _reason = decide(n=n, nan=nan, wins=wins, losses=losses, lift=lift, p_value=p)

    assert got == verdict


def test_alpha_must_be_a_probability():
    with pytest.raises(ValueError):
        difference_tests([1.0, 0.0], alpha=0.0)
