"""Picking the best of a family: Holm-Bonferroni and the max-statistic permutation p, beside
the raw p, checked against hand tables, brute-force references and scipy to 1e-9."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as scipy_stats

from flashrsi_dagster.stats import family_markdown, family_tests, holm, permutation_test

EXACT = 1e-9


# --- Holm-Bonferroni -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "adjusted"),
    [
        # Sorted 0.005, 0.01, 0.03, 0.04 -> 4 x 0.005, 3 x 0.01, 2 x 0.03, max(0.06, 1 x 0.04).
        ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),
        ([0.5, 0.6], [1.0, 1.0]),  # 2 x 0.5 is capped at 1, and the next is no smaller
        ([0.2], [0.2]),  # a family of one is not corrected
        ([0.01, 0.01, 0.01], [0.03, 0.03, 0.03]),  # ties
        ([], []),
    ],
)
def test_holm_matches_the_hand_computed_table(raw, adjusted):
    assert holm(raw) == pytest.approx(adjusted, abs=EXACT)


def test_an_undefined_p_stays_undefined_but_counts_in_the_family():
    # m = 3, the None as p = 1: 3 x 0.01 = 0.03, 2 x 0.02 = 0.04.
    assert holm([0.01, None, 0.02]) == [pytest.approx(0.03), None, pytest.approx(0.04)]


def _holm_by_closed_testing(p: list[float]) -> list[float]:
    """Holm is the closed test of Bonferroni tests: p_j's adjusted value is the largest, over
    every subset S holding j, of min(1, |S| * min over S)."""
    m = len(p)
    subsets = [s for r in range(1, m + 1) for s in itertools.combinations(range(m), r)]
    return [
        max(min(1.0, len(s) * min(p[i] for i in s)) for s in subsets if j in s) for j in range(m)
    ]


def test_holm_matches_closed_testing_and_is_never_below_benjamini_hochberg():
    rng = np.random.default_rng(5)
    for m in range(1, 8):
        raw = list(rng.uniform(0, 0.2, m))
        adjusted = holm(raw)
        assert adjusted == pytest.approx(_holm_by_closed_testing(raw), abs=EXACT)
        # Holm controls the family-wise error, BH only the false-discovery rate.
        bh = scipy_stats.false_discovery_control(raw, method="bh")
        assert all(h >= b - EXACT for h, b in zip(adjusted, bh, strict=True))


# --- the max statistic -----------------------------------------------------------------------


def _max_statistic_by_brute_force(columns: dict[str, list[float]]) -> dict[str, float]:
    """Every sign assignment in Python, the tasks flipped together for every candidate."""
    d = np.array(list(columns.values()), dtype=float).T  # tasks x candidates
    observed = np.abs(d.sum(axis=0))
    maxima = [
        np.abs(np.array(signs) @ d).max() for signs in itertools.product((1.0, -1.0), repeat=len(d))
    ]
    return {
        name: sum(top >= observed[j] - 1e-9 for top in maxima) / len(maxima)
        for j, name in enumerate(columns)
    }


FAMILY = {
    "a": [1, 2 / 3, 1, 0, 1 / 3, 1, -1 / 3, 2 / 3, 1],
    "b": [1, 0, 2 / 3, -1, 0, 1, 0, 1 / 3, 1],
    "c": [-1, 1, 1 / 3, -2 / 3, 1, 1, -1 / 3, 1, 0],
    "d": [1, 1, 0, 2 / 3, -1, 0, 1, 0, 1 / 3],
}
"""Four candidates on nine tasks; the best, a, has raw p 3/128 = 0.023."""


def test_family_figures_match_the_references():
    result = family_tests(FAMILY)
    by_name = {c.name: c for c in result.candidates}
    reference = _max_statistic_by_brute_force(FAMILY)
    raw = [permutation_test(FAMILY[name]).p_value for name in FAMILY]

    assert (result.n, result.method, result.resamples, result.seed) == (9, "exact", 512, None)
    assert [c.name for c in result.candidates] == list(FAMILY)
    assert [c.p_value for c in result.candidates] == pytest.approx(raw, abs=EXACT)
    assert [c.p_holm for c in result.candidates] == pytest.approx(holm(raw), abs=EXACT)
    for name, expected in reference.items():
        assert by_name[name].p_max_statistic == pytest.approx(expected, abs=EXACT)
        assert by_name[name].lift == pytest.approx(np.mean(FAMILY[name]), abs=EXACT)
    assert result.best == "a"
    best = result.best_test
    # Raw 0.023 < max statistic 0.047 < Holm 0.094: corrected, the best is barely significant,
    # and the max statistic, which sees the candidates move together, corrects less than Holm.
    assert best is not None
    assert best.p_value == pytest.approx(3 / 128, abs=EXACT)
    assert best.p_max_statistic == pytest.approx(6 / 128, abs=EXACT)
    assert best.p_holm == pytest.approx(12 / 128, abs=EXACT)


def test_one_candidate_s_max_statistic_p_is_its_raw_p_and_scipy_s():
    d = FAMILY["a"]
    thirds = [round(3 * x) for x in d]  # scipy on numerators: exact sums

    only = family_tests({"a": d}).candidates[0]
    expected = scipy_stats.permutation_test(
        (np.array(thirds, dtype=float), np.zeros(len(d))),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        vectorized=True,
    ).pvalue

    assert only.p_value == only.p_max_statistic == only.p_holm
    assert only.p_value == pytest.approx(expected, abs=EXACT)


def test_copies_of_one_candidate_are_not_a_multiple_comparison_for_the_max_statistic():
    # The max of identical columns is the column; Holm, blind to the dependence, multiplies.
    result = family_tests({"x": FAMILY["a"], "y": FAMILY["a"], "z": FAMILY["a"]})

    for c in result.candidates:
        assert c.p_max_statistic == pytest.approx(c.p_value, abs=EXACT)
        assert c.p_holm == pytest.approx(min(1.0, 3 * c.p_value), abs=EXACT)


def test_the_best_is_the_highest_lift_and_the_first_on_a_tie():
    result = family_tests({"low": [0.0, 1 / 3], "high": [1.0, 0.0], "same": [0.0, 1.0]})

    assert result.best == "high"


def test_a_nan_keeps_its_candidate_out_of_the_best_and_undefines_the_max_statistic():
    family = {**FAMILY, "e": [1.0] * 8 + [float("nan")]}

    result = family_tests(family)
    e = result.candidates[-1]
    others = result.candidates[:-1]

    assert (e.nan, e.lift, e.p_value, e.p_holm, e.p_max_statistic) == (1, None, None, None, None)
    assert result.best == "a"
    assert all(c.p_max_statistic is None for c in others)
    # The others keep their raw p; Holm counts the NaN candidate in m = 5.
    raw = [permutation_test(FAMILY[name]).p_value for name in FAMILY]
    assert [c.p_value for c in others] == pytest.approx(raw, abs=EXACT)
    assert [c.p_holm for c in others] == pytest.approx(holm([*raw, None])[:-1], abs=EXACT)


def test_no_tasks_or_no_candidates_leave_everything_undefined():
    empty = family_tests({"a": [], "b": []})
    assert empty.best is None
    assert all(c.p_value is c.p_max_statistic is c.lift is None for c in empty.candidates)
    assert (empty.method, empty.resamples) == (None, 0)
    assert family_tests({}).candidates == []


def test_candidates_must_be_on_the_same_tasks():
    with pytest.raises(ValueError, match="share their tasks"):
        family_tests({"a": [1.0, 0.0], "b": [1.0]})


def test_above_20_tasks_the_family_is_sampled_with_the_single_test_s_draws():
    rng = np.random.default_rng(3)
    family = {name: list(rng.integers(-3, 4, 30) / 3) for name in ("a", "b", "c")}

    result = family_tests(family, draws=20_000, seed=4)
    again = family_tests(family, draws=20_000, seed=4)
    single = permutation_test(family["a"], draws=20_000, seed=4)

    assert (result.method, result.resamples, result.seed) == ("monte_carlo", 20_000, 4)
    assert result == again
    assert result.candidates[0].p_value == pytest.approx(single.p_value, abs=EXACT)
    assert all(c.p_max_statistic >= c.p_value for c in result.candidates)


def test_markdown_marks_the_best():
    text = family_markdown(family_tests(FAMILY))

    assert text.startswith("| candidate | lift | p | p (Holm) | p (max statistic) |\n")
    assert "| **a** (best) | +0.593 |" in text
    assert "| b | +0.333 | 0.25 | 0.75 | 0.629 |" in text
