"""The explorer's JSON API over real experiments, through Starlette's test client: what a
node shows, and what a request can never reach (another folder, a file outside a snapshot, a
write)."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from flashrsi_dagster.explorer.server import create_app

DAGSTER = "http://127.0.0.1:3000"


@pytest.fixture(scope="module")
def client(demo_home):
    return TestClient(create_app(demo_home, DAGSTER))


def _node(client, name: str, round_: int) -> dict:
    tree = client.get(f"/api/experiments/{name}/tree").json()
    return next(n for n in tree["nodes"] if n["round"] == round_)


def test_the_page_and_its_vendored_libraries_are_served(client):
    assert "FlashRSI explorer" in client.get("/").text
    for vendored in (
        *("d3-hierarchy.min.js", "uPlot.iife.min.js", "uPlot.min.css"),
        *("highlight.min.js", "highlight-github.min.css"),
    ):
        assert client.get(f"/static/vendor/{vendored}").status_code == 200


def test_a_node_shows_its_evidence_trajectories_and_dagster_pages(client):
    node = _node(client, "meta-harness-demo", 1)
    detail = client.get(f"/api/experiments/meta-harness-demo/nodes/{node['id']}").json()

    (decision,) = detail["decisions"]
    assert decision["evidence"]["paired"]["verdict"] == node["verdict"]
    assert detail["worker"] and detail["worker"][0]["entries"]
    assert len(detail["target"]) == 6 and {t["split"] for t in detail["target"]} == {"dev"}
    kinds = {r["value"]["kind"] for r in detail["records"]}
    assert "round" in kinds
    snapshot = detail["links"][0]
    assert snapshot["asset"] == "snapshot"
    assert snapshot["url"] == (
        f"{DAGSTER}/assets/meta_harness/snapshot?view=partitions"
        "&partition=r001.c0%7Cmeta-harness-demo"
    )


def test_a_node_s_code_and_diff_come_from_its_snapshot(client):
    node = _node(client, "meta-harness-demo", 1)
    base = f"/api/experiments/meta-harness-demo/nodes/{node['id']}"
    files = [f["path"] for f in client.get(f"{base}/code").json()]
    assert "prompts/system.md" in files
    prompt = client.get(f"{base}/code/prompts/system.md").json()
    diff = client.get(f"{base}/diff").json()

    assert diff["parent"] == node["parent"]
    assert "diff --git a/prompts/system.md b/prompts/system.md" in diff["diff"]
    added = [line[1:] for line in diff["diff"].splitlines() if line.startswith("+-")]
    assert added and all(line in prompt["text"] for line in added)


def test_the_seed_has_no_diff(client):
    seed = _node(client, "meta-harness-demo", 0)
    diff = client.get(f"/api/experiments/meta-harness-demo/nodes/{seed['id']}/diff").json()
    assert diff == {"parent": None, "diff": "", "stats": None}


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/api/experiments/.dagster/tree", 400),  # not a name: the home's Dagster instance
        ("/api/experiments/no-such/tree", 404),
        ("/api/experiments/meta-harness-demo/nodes/..%2F..%2Frun_meta.json", 404),
        ("/api/experiments/meta-harness-demo/nodes/0123456789abcdef0123/code", 404),
    ],
)
def test_what_is_not_an_experiment_or_a_node_is_refused(client, path, status):
    response = client.get(path)
    assert response.status_code == status
    assert response.json()["error"]


def test_no_file_outside_a_snapshot_is_served(client):
    node = _node(client, "meta-harness-demo", 1)
    base = f"/api/experiments/meta-harness-demo/nodes/{node['id']}/code"
    for path in ("../../run_meta.json", "%2E%2E/%2E%2E/run_meta.json", "/etc/passwd"):
        response = client.get(f"{base}/{path}")
        assert response.status_code == 404, path
        assert "schema_version" not in response.text
    assert client.get("/static/../server.py").status_code == 404


def test_the_api_only_reads(client):
    assert client.post("/api/experiments").status_code == 405
    assert client.delete("/api/experiments/meta-harness-demo/tree").status_code == 405
