"""STOP on Dagster: its assets, its two jobs, and its step -> run mapping."""

from __future__ import annotations

from flashrsi_dagster.algorithms.stop.defs import assets
from flashrsi_dagster.algorithms.stop.run import Stop
from flashrsi_dagster.orchestration.algorithm_defs import AlgorithmDefs

DEFS = AlgorithmDefs.of(
    Stop,
    assets,
    round="One STOP round: the seed improver scored at round 0, else the current improver "
    "applied to its own code under the train meta-utility, the program it returns "
    "contamination-checked, read for circumvention attempts and scored (train, dev).",
    finalize="Promote the best dev meta-utility among improvers never flagged, then score its "
    "returned solutions once on the sealed test split.",
)
