"""The Evolver on Dagster: its assets, its two jobs, and its step -> run mapping."""

from __future__ import annotations

from flashrsi_dagster.algorithms.evolver.defs import assets
from flashrsi_dagster.algorithms.evolver.run import Evolver
from flashrsi_dagster.orchestration.algorithm_defs import AlgorithmDefs

DEFS = AlgorithmDefs.of(
    Evolver,
    assets,
    round="One Evolver step, named by its slot: the cold start (round 0, `vanilla`), a round's "
    "diagnosis and WHY pick (`diagnose`), one candidate's design, screen, confirm and gates "
    "(`w<i>c<j>`, `x<n>`), or the round's decision (`decide`).",
    finalize="After termination: the QD archive and the decision ledger the search leaves, "
    "then the test split unsealed once for the retention report. Refused mid-search.",
    promotes=False,
)
