"""Meta-Harness on Dagster: its assets, its two jobs, and its step -> run mapping."""

from __future__ import annotations

from flashrsi_dagster.algorithms.meta_harness.defs import assets
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.orchestration.algorithm_defs import AlgorithmDefs

DEFS = AlgorithmDefs.of(
    MetaHarness,
    assets,
    round="One Meta-Harness candidate (round x slot): the Worker's edit and its dev "
    "evaluation. A round's candidates may run side by side (algorithm.candidates_per_round).",
    finalize="Promote the best dev snapshot, then evaluate it once on the sealed test split. "
    "Refused until every round has its result.",
)
