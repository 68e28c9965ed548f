"""The one Dagster entry point: every algorithm's assets and jobs, the experiment starter,
the round driver, the nightly schedule and the resources, wired.

Nothing reads the environment at import time: the home folder comes from the resources'
config (default `./.flashrsi`, overridable in the UI's Launchpad or by `flashrsi ui`)."""

from __future__ import annotations

from flashrsi_dagster.deployment.definitions import build_definitions

HOME = ".flashrsi"  # relative to where the code location runs; `flashrsi ui` runs it there

defs = build_definitions(HOME)
