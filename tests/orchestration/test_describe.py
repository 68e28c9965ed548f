"""What the UI shows: the pieces of `assets.describe` that decide, not just render."""

from __future__ import annotations

from flashrsi_dagster.orchestration.describe import figures, previous_night


def test_the_previous_night_is_the_latest_earlier_night_of_the_same_config():
    names = [
        "demo-nightly-20261128",
        "demo-nightly-20261130",
        "demo-nightly-20261201",
        "other-nightly-20261130",
        "demo",
    ]

    assert previous_night("demo-nightly-20261201", names) == "demo-nightly-20261130"
    assert previous_night("demo-nightly-20261128", names) is None
    assert previous_night("demo", names) is None


def test_figures_are_rounded_once_and_missing_ones_read_as_a_dash():
    assert figures(dev_score=0.123456, cost=0.0123456, lift=None, rollouts=12) == {
        "dev_score": 0.123,
        "cost": 0.0123,
        "lift": "-",
        "rollouts": 12,
    }
