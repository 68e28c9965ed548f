"""ModularRSI on Dagster: its assets, its two jobs, and its step -> run mapping."""

from __future__ import annotations

import dagster as dg

from flashrsi_dagster.algorithms.modular_rsi.run import ModularRSI
from flashrsi_dagster.assets import modular_rsi as assets
from flashrsi_dagster.defs.base import AlgorithmDefs

round_job = dg.define_asset_job(
    "modular_rsi",
    selection=dg.AssetSelection.assets(*assets.ROUND_ASSETS),
    executor_def=dg.in_process_executor,
    description="One ModularRSI step: a module branch's batch (rollouts, findings, one edit, "
    "the gates) or an integration round (merge or repair, the gates, the full check).",
)
finalize_job = dg.define_asset_job(
    "modular_rsi_finalize",
    selection=dg.AssetSelection.assets(*assets.FINAL_ASSETS),
    executor_def=dg.in_process_executor,
    description="The integration's result, the promotion it decides, then the sealed test "
    "once. Refused until every branch step and integration round is done.",
)

DEFS = AlgorithmDefs(
    algorithm=ModularRSI,
    partitions=assets.PARTITIONS,
    assets=assets.ASSETS,
    round_job=round_job,
    finalize_job=finalize_job,
    sealed_test=assets.key("sealed_test_score"),
)
