"""Meta-Harness on Dagster: its assets, its two jobs, and its step -> run mapping."""

from __future__ import annotations

import dagster as dg

from flashrsi_dagster.algorithms.meta_harness import MetaHarness
from flashrsi_dagster.assets import meta_harness as assets
from flashrsi_dagster.defs.base import AlgorithmDefs

round_job = dg.define_asset_job(
    "meta_harness",
    selection=dg.AssetSelection.assets(*assets.ROUND_ASSETS),
    executor_def=dg.in_process_executor,  # a step per subprocess costs more than a round
    description="One Meta-Harness round: the Worker's candidate and its dev evaluation.",
)
finalize_job = dg.define_asset_job(
    "meta_harness_finalize",
    selection=dg.AssetSelection.assets(*assets.FINAL_ASSETS),
    executor_def=dg.in_process_executor,
    description="Promote the best dev snapshot, then evaluate it once on the sealed test "
    "split. Refused until every round has its result.",
)

DEFS = AlgorithmDefs(
    algorithm=MetaHarness,
    partitions=assets.PARTITIONS,
    assets=assets.ASSETS,
    round_job=round_job,
    finalize_job=finalize_job,
    sealed_test=assets.key("sealed_test_score"),
)
