"""Best-of-N on Dagster: its assets, its two jobs, and its step -> run mapping."""

from __future__ import annotations

from flashrsi_dagster.algorithms.best_of_n.defs import assets
from flashrsi_dagster.algorithms.best_of_n.run import BestOfN
from flashrsi_dagster.orchestration.algorithm_defs import AlgorithmDefs

DEFS = AlgorithmDefs.of(
    BestOfN,
    assets,
    round="One best-of-N candidate (round x slot): the seed's evaluation at round 0, else one "
    "independent Worker edit of the seed and its dev evaluation. A round's samples may run "
    "side by side (algorithm.side_by_side); a new round starts only while budget is left.",
    finalize="Promote the best dev snapshot, then evaluate it once on the sealed test split.",
)
