"""Meta-Harness: the history folder for the Worker, one candidate per step, best-on-dev
promotion, the sealed test once at the end (seed 000)."""

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.meta_harness.evolve import evolve
from flashrsi_dagster.algorithms.meta_harness.plan import SLOT, State, next_step, rank, read_state
from flashrsi_dagster.algorithms.meta_harness.records import Layout
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness

__all__ = [
    "SLOT",
    "Layout",
    "MetaHarness",
    "State",
    "Step",
    "evolve",
    "next_step",
    "rank",
    "read_state",
]
