"""The start job's Launchpad defaults: its overrides fit any algorithm's config file."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.config import ConfigError, load_config
from flashrsi_dagster.deployment.start import StartExperiment
from flashrsi_dagster.orchestration.resources.experiments import ExperimentsResource

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"


def test_the_default_overrides_apply_to_every_algorithm(modular_dir):
    overrides = StartExperiment().overrides

    assert StartExperiment().config_file == "examples/meta_harness.yaml"
    assert load_config(EXAMPLE, overrides).benchmark.limit == 9
    assert load_config(modular_dir / "modular.yaml", overrides).benchmark.limit == 9


def test_the_start_job_takes_a_name_never_a_path(config_dir):
    """The Launchpad's `name` is an experiment name: a path is refused, nothing written."""
    home = Path.cwd() / "home"
    experiments = ExperimentsResource.at(home)

    for name in ("../escape", str(Path.cwd() / "abs")):
        with pytest.raises(ConfigError, match="expected an experiment name"):
            experiments.create(config_dir / "exp.yaml", name=name)

    assert not home.exists() and sorted(Path.cwd().iterdir()) == []
