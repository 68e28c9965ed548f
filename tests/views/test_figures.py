"""Figures for the UI: scores to 3 decimals, costs to 4, ints as ints, missing as missing."""

from __future__ import annotations

import numpy as np

from flashrsi_dagster.views import cost_text, duration_text, round_figure, round_figures, score_text


def test_scores_get_three_decimals_costs_four_and_ints_stay_ints():
    metadata = {
        "dev_score": 0.123456,
        "cost": 0.0123456,
        "worker_cost": 1.23456789,
        "spend_usd": 2.000049,
        "rollouts": 12,
        "won": np.int64(3),
        "lift": np.float64(-0.0333333),
        "snapshot_id": "abc",
        "compared": True,
        "p_value": None,
    }

    rounded = round_figures(metadata)

    assert rounded == {
        "dev_score": 0.123,
        "cost": 0.0123,
        "worker_cost": 1.2346,
        "spend_usd": 2.0,
        "rollouts": 12,
        "won": 3,
        "lift": -0.033,
        "snapshot_id": "abc",
        "compared": True,
        "p_value": None,
    }
    assert type(rounded["won"]) is int and type(rounded["lift"]) is float


def test_nested_figures_are_rounded_by_the_key_that_holds_them():
    rounded = round_figures({"by_round": [0.33333, {"cost": 0.000123456}], "cost": [0.123456]})

    assert rounded == {"by_round": [0.333, {"cost": 0.0001}], "cost": [0.1235]}


def test_a_small_figure_keeps_three_significant_digits_rather_than_reading_as_zero():
    assert round_figure(0.0000123456) == 0.0000123
    assert round_figure(-0.0004567) == -0.000457
    assert round_figure(0.0) == 0.0
    assert round_figures({"cost": 0.0000123456}) == {"cost": 0.0000123}


def test_texts_show_missing_figures_as_a_dash():
    assert (score_text(0.5), score_text(None)) == ("0.500", "-")
    assert (cost_text(0.01234567), cost_text(None)) == ("$0.0123", "-")
    assert [duration_text(s) for s in (2.345, 75, 3725)] == ["2.3 s", "1 min 15 s", "1 h 2 min"]
