"""DGM on Dagster: its assets, its two jobs, and its step -> run mapping."""

from __future__ import annotations

from flashrsi_dagster.algorithms.dgm.defs import assets
from flashrsi_dagster.algorithms.dgm.run import Dgm
from flashrsi_dagster.orchestration.algorithm_defs import AlgorithmDefs

DEFS = AlgorithmDefs.of(
    Dgm,
    assets,
    round="One candidate: the seed admitted at generation 0, else a parent drawn from the "
    "archive editing a copy of itself, the child's admission checks and staged train scores.",
    finalize="Admitted members on dev, the best promoted, then the sealed test (top k), once.",
)
