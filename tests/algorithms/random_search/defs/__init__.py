"""Random search on Dagster: its assets, its two jobs, and its step -> run mapping."""

from __future__ import annotations

from flashrsi_dagster.orchestration.algorithm_defs import AlgorithmDefs
from tests.algorithms.random_search.defs import assets
from tests.algorithms.random_search.run import RandomSearch

DEFS = AlgorithmDefs.of(
    RandomSearch,
    assets,
    round="One round: the seed's dev evaluation at round 0, else a drawn edit of the seed "
    "committed as a snapshot and evaluated on dev.",
    finalize="Promote the best dev snapshot, then evaluate it once on the sealed test split.",
)
