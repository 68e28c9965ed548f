"""Jobs: one per algorithm. A Meta-Harness round is one run of `meta_harness` for one
round x candidate partition; `meta_harness_finalize` promotes and runs the sealed test."""

from __future__ import annotations

import dagster as dg

from flashrsi_dagster.assets.meta_harness import FINAL_ASSETS, ROUND_ASSETS

meta_harness = dg.define_asset_job(
    "meta_harness",
    selection=dg.AssetSelection.assets(*ROUND_ASSETS),
    description="One Meta-Harness round: the Worker's candidate and its dev evaluation.",
)
meta_harness_finalize = dg.define_asset_job(
    "meta_harness_finalize",
    selection=dg.AssetSelection.assets(*FINAL_ASSETS),
    description="Promote the best dev snapshot, then evaluate it once on the sealed test split.",
)
