"""Candidate keys and nightly names: what partitions, run keys and folders are named by."""

from __future__ import annotations

import pytest

from flashrsi_dagster.config.models import ExperimentSection
from flashrsi_dagster.experiment.keys import (
    NIGHTLY,
    candidate_key,
    nightly_name,
    parse_candidate_key,
)


def test_candidate_keys_name_round_then_slot_and_refuse_what_dagster_would_drop():
    assert candidate_key(7, "c0") == "r007.c0"
    assert parse_candidate_key("r1234.agent_loop") == (1234, "agent_loop")
    for bad in ("r7.c0", "r007", "r007.c|0", "r007.c,0", "x007.c0"):
        with pytest.raises(ValueError, match="not a candidate key"):
            parse_candidate_key(bad)


def test_a_nightly_name_stays_a_valid_experiment_name_however_long_the_base():
    long = "a" * 80
    name = nightly_name(long, "20261201")

    assert ExperimentSection(name=name).name == name  # within the limit, still valid
    assert name.endswith("-nightly-20261201") and len(name) == 80
    assert NIGHTLY.fullmatch(nightly_name("demo", "20261201"))["base"] == "demo"
