"""ModularRSI on Dagster: its assets, its two jobs, and its step -> run mapping."""

from __future__ import annotations

from flashrsi_dagster.algorithms.modular_rsi.defs import assets
from flashrsi_dagster.algorithms.modular_rsi.run import ModularRSI
from flashrsi_dagster.orchestration.algorithm_defs import AlgorithmDefs

DEFS = AlgorithmDefs.of(
    ModularRSI,
    assets,
    round="One ModularRSI step: a module branch's batch (rollouts, findings, one edit, the "
    "gates) or an integration round (merge or repair, the gates, the full check).",
    finalize="The integration's result, the promotion it decides, then the sealed test once. "
    "Refused until every branch step and integration round is done.",
)
