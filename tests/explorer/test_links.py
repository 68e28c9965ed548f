"""The explorer links a node to its algorithm's candidate-partitioned assets: the list it
keeps is the one the Dagster definitions have, for every algorithm."""

from __future__ import annotations

import dagster as dg

from flashrsi_dagster.algorithms import registry
from flashrsi_dagster.deployment.definitions import build_definitions
from flashrsi_dagster.explorer.links import CANDIDATE_ASSETS
from flashrsi_dagster.orchestration.partitions import CANDIDATE


def test_each_algorithm_s_candidate_assets_are_those_the_explorer_links_to():
    defined: dict[str, set[str]] = {}
    for spec in build_definitions(".flashrsi").resolve_all_asset_specs():
        grid = spec.partitions_def
        candidates = isinstance(grid, dg.MultiPartitionsDefinition) and (
            CANDIDATE in grid.partition_dimension_names
        )
        if candidates:
            defined.setdefault(spec.key.path[0], set()).add(spec.key.path[-1])

    assert set(defined) == set(registry.ALGORITHMS)
    assert {k: set(v) for k, v in CANDIDATE_ASSETS.items()} == defined
