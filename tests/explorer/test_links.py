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


def test_the_run_tags_the_explorer_filters_by_are_those_the_runs_carry():
    from flashrsi_dagster.explorer import links
    from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
    from flashrsi_dagster.orchestration.tags import CANDIDATE_TAG, ROUND_TAG

    assert (links.EXPERIMENT_TAG, links.ROUND_TAG, links.CANDIDATE_TAG) == (
        EXPERIMENT_TAG,
        ROUND_TAG,
        CANDIDATE_TAG,
    )


def test_a_node_links_to_its_runs_filtered_by_experiment_round_and_candidate():
    from urllib.parse import parse_qs, urlsplit

    from flashrsi_dagster.explorer.links import dagster_links

    found = dagster_links("http://127.0.0.1:3000/", "evolver", "demo", 2, "w1c2")
    runs = found[-1]
    assert runs["kind"] == "runs" and [f["asset"] for f in found[:-1]] == list(
        CANDIDATE_ASSETS["evolver"]
    )
    url = urlsplit(runs["url"])
    assert url.path == "/runs"
    assert parse_qs(url.query)["q[]"] == [
        "tag:flashrsi/experiment=demo",
        "tag:flashrsi/round=2",
        "tag:flashrsi/candidate=w1c2",
    ]
    assert dagster_links(None, "evolver", "demo", 2, "w1c2") == []  # no Dagster UI to link
    assert dagster_links("http://x", "evolver", "demo", None, None) == []  # the vanilla seed


def test_flashrsi_ui_tells_the_dagster_webserver_where_the_explorer_is(tmp_path, monkeypatch):
    from flashrsi_dagster.deployment.instance import ui_environment
    from flashrsi_dagster.explorer.links import EXPLORER_URL_ENV

    monkeypatch.delenv(EXPLORER_URL_ENV, raising=False)
    assert ui_environment(tmp_path, 3999)[EXPLORER_URL_ENV] == "http://127.0.0.1:3999"
    assert EXPLORER_URL_ENV not in ui_environment(tmp_path, None)  # no explorer started
    monkeypatch.setenv(EXPLORER_URL_ENV, "https://explorer.example/lab")
    assert ui_environment(tmp_path, 3999)[EXPLORER_URL_ENV] == "https://explorer.example/lab"


def test_a_candidate_snapshot_s_metadata_links_to_its_node_in_the_explorer(demo_home, monkeypatch):
    """Both ways: the link Dagster shows on a snapshot partition opens that node's page."""
    import json
    from urllib.parse import parse_qs, urlsplit

    from starlette.testclient import TestClient

    from flashrsi_dagster.algorithms.meta_harness.defs.assets import PARTITIONS, key
    from flashrsi_dagster.explorer.links import EXPLORER_URL_ENV
    from flashrsi_dagster.explorer.server import create_app
    from flashrsi_dagster.orchestration import describe
    from flashrsi_dagster.snapshots import SnapshotStore

    monkeypatch.setenv(EXPLORER_URL_ENV, "http://127.0.0.1:3999/")
    folder = demo_home / "meta-harness-demo"
    info = json.loads((folder / "records" / "meta_harness" / "round-001.json").read_text())
    store = SnapshotStore(folder / "snapshots")
    metadata = describe.snapshot(store, info, PARTITIONS, "meta-harness-demo", key("snapshot"))

    link = metadata["explorer"]
    assert isinstance(link, dg.UrlMetadataValue)
    url = urlsplit(link.url)
    assert url.netloc == "127.0.0.1:3999" and url.path == "/"
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert query == {"experiment": "meta-harness-demo", "node": info["snapshot_id"]}
    client = TestClient(create_app(demo_home), base_url="http://127.0.0.1")
    node = client.get(f"/api/experiments/{query['experiment']}/nodes/{query['node']}")
    assert node.status_code == 200 and node.json()["node"]["round"] == 1


def test_an_edit_that_committed_nothing_links_to_its_round_and_slot_node():
    from flashrsi_dagster.orchestration.describe import explorer_node

    assert explorer_node(None, 3, "c1") == "r3.c1"
    assert explorer_node("ab" * 20, 3, "c1") == "ab" * 20
    assert explorer_node(None, 0, None) is None
