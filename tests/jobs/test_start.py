"""The start job's Launchpad defaults: its overrides fit any algorithm's config file."""

from __future__ import annotations

from pathlib import Path

from flashrsi_dagster.config import load_config
from flashrsi_dagster.jobs.start import StartExperiment

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"


def test_the_default_overrides_apply_to_every_algorithm(modular_dir):
    overrides = StartExperiment().overrides

    assert StartExperiment().config_file == "examples/meta_harness.yaml"
    assert load_config(EXAMPLE, overrides).benchmark.limit == 9
    assert load_config(modular_dir / "modular.yaml", overrides).benchmark.limit == 9
