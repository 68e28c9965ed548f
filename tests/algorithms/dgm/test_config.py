"""DGM's config: the paper's defaults, its ablations as two switches, bad values refused with
the key named."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.config import load_config
from flashrsi_dagster.config.errors import ConfigError

EXAMPLE = Path(__file__).parents[3] / "examples" / "dgm.yaml"


def test_the_defaults_are_the_official_codes():
    config = load_config(EXAMPLE, [])
    algorithm = config.algorithm
    fresh = type(algorithm).model_validate({"name": "dgm", "worker": algorithm.worker})

    assert fresh.generations == 80 and fresh.children_per_generation == 2
    assert fresh.parents.mode == "score_child_prop"
    assert fresh.staged.threshold == 0.4 and fresh.staged.first_tasks == 10
    assert fresh.self_improvement and fresh.open_ended and fresh.test_top_k == 1


@pytest.mark.parametrize(
    ("override", "said"),
    [
        (["--algorithm.parents.mode", "greedy"], "algorithm.parents.mode"),
        (["--algorithm.staged.threshold", "1.5"], "algorithm.staged.threshold"),
        (["--algorithm.children_per_generation", "0"], "algorithm.children_per_generation"),
        (
            ["--algorithm.dev_candidates", "1", "--algorithm.test_top_k", "2"],
            "test_top_k (2) exceeds",
        ),
        (["--algorithm.selfimprove", "true"], "algorithm.selfimprove"),
    ],
)
def test_a_bad_value_is_refused_naming_its_key(override, said):
    with pytest.raises(ConfigError) as error:
        load_config(EXAMPLE, override)

    assert said in str(error.value)
