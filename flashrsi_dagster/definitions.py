"""The one Dagster entry point: every asset, job, sensor, schedule and resource, wired.

Nothing reads the environment at import time: the home folder comes from the resources'
config (default `./.flashrsi`, overridable in the UI's Launchpad or by `flashrsi ui`)."""

from __future__ import annotations

import dagster as dg

from flashrsi_dagster.assets.meta_harness import FINAL_ASSETS, ROUND_ASSETS
from flashrsi_dagster.jobs import meta_harness, meta_harness_finalize
from flashrsi_dagster.jobs.driver import resources
from flashrsi_dagster.sensors import NightlyConfig, meta_harness_driver, nightly_meta_harness

HOME = ".flashrsi"  # relative to where the code location runs; `flashrsi ui` runs it there

defs = dg.Definitions(
    assets=[*ROUND_ASSETS, *FINAL_ASSETS],
    jobs=[meta_harness, meta_harness_finalize],
    sensors=[meta_harness_driver],
    schedules=[nightly_meta_harness],
    resources={**resources(HOME), "nightly": NightlyConfig()},
)
