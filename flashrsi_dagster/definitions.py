"""The one Dagster entry point: every algorithm's assets and jobs, the experiment starter,
the round driver, the nightly schedule and the resources, wired.

Nothing reads the environment at import time: the definitions are made when Dagster loads the
code location (`@dg.definitions`), their home folder from `FLASHRSI_HOME` where the process
loading them has it (a container, a pod, `flashrsi ui`'s code server), else `./.flashrsi`
(overridable in the UI's Launchpad). See docs/scaling-out/index.md, "The experiment home"."""

from __future__ import annotations

import os
from collections.abc import Mapping

import dagster as dg

from flashrsi_dagster.deployment.code_server import HOME_ENV
from flashrsi_dagster.deployment.definitions import build_definitions

HOME = ".flashrsi"  # relative to where the code location runs, where HOME_ENV is not set


def code_location_home(environ: Mapping[str, str] = os.environ) -> str:
    """The experiments folder the code location's resources are bound to."""
    return environ.get(HOME_ENV) or HOME


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions(code_location_home())
