"""The explorer's JSON API over real experiments, through Starlette's test client: what a
node shows, and what a request can never reach (another folder, a file outside a snapshot, a
write)."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from flashrsi_dagster.controls.spend import spend_by_role
from flashrsi_dagster.explorer.server import create_app
from tests.explorer.conftest import DEMOS

DAGSTER = "http://127.0.0.1:3000"


@pytest.fixture(scope="module")
def client(demo_home):
    return TestClient(create_app(demo_home, DAGSTER), base_url="http://127.0.0.1")


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


def test_a_node_s_tokens_per_role_add_up_its_trajectories_and_it_links_to_its_runs(client):
    node = _node(client, "meta-harness-demo", 1)
    detail = client.get(f"/api/experiments/meta-harness-demo/nodes/{node['id']}").json()

    for role in ("worker", "target"):
        runs = detail[role]
        spent = detail["tokens"][role]
        assert spent["runs"] == len(runs) > 0
        for count in ("input_tokens", "output_tokens", "tool_calls", "turns"):
            assert spent[count] == sum(r["usage"][count] for r in runs)
    assert detail["tokens"]["worker"]["model_calls"] > 0  # the gateway's own count
    runs = detail["links"][-1]
    assert runs["kind"] == "runs" and runs["url"].startswith(f"{DAGSTER}/runs?")
    assert "flashrsi%2Fcandidate%3Dc0" in runs["url"]


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_each_role_s_spend_is_the_gateway_log_s_and_its_candidates_add_up_to_it(
    client, demo_home, name
):
    spend = client.get(f"/api/experiments/{name}/spend").json()
    roles, candidates = spend["roles"], spend["candidates"]
    counted = spend_by_role(demo_home / name / "logs" / "gateway.jsonl", name)

    assert set(roles) == set(counted) and {"worker", "target"} <= set(roles)
    for role, spent in roles.items():
        assert spent["model_calls"] == counted[role].model_calls
        assert spent["input_tokens"] + spent["output_tokens"] == counted[role].tokens
        for count in ("model_calls", "input_tokens", "output_tokens"):
            shares = [c[role][count] for c in candidates.values() if role in c]
            assert sum(shares) == spent[count]
    assert any(re.fullmatch(r"r\d{3,}\.[\w-]+", key) for key in candidates)


def test_a_node_s_gateway_spend_is_what_its_trajectories_used(client):
    """The Worker run that made round 1's candidate and its dev rollouts: every call the
    gateway logged for `r001.c0`, and nothing of any other candidate's."""
    node = _node(client, "meta-harness-demo", 1)
    detail = client.get(f"/api/experiments/meta-harness-demo/nodes/{node['id']}").json()

    for role in ("worker", "target"):
        runs, spent = detail[role], detail["spend"][role]
        assert spent["model_calls"] == sum(r["usage"]["model_calls"] for r in runs) > 0
        for count in ("input_tokens", "output_tokens"):
            assert spent[count] == sum(r["usage"][count] for r in runs)


def test_the_tree_carries_its_plots_and_its_runs_link(client):
    tree = client.get("/api/experiments/meta-harness-demo/tree").json()
    plots = tree["plots"]

    assert plots["score_over_rounds"]["rounds"] == [0, 1, 2]
    assert plots["pareto"]["points"] and plots["pareto"]["frontier"]
    (tested,) = plots["dev_test_gap"]
    assert tested["id"] == tree["baseline"] and tested["test"] == tree["sealed_test"]["score"]
    assert tree["runs"] == f"{DAGSTER}/runs?q%5B%5D=tag%3Aflashrsi%2Fexperiment%3Dmeta-harness-demo"


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


def test_a_request_naming_another_host_is_refused_dns_rebinding(demo_home):
    """A page on a name pointed at 127.0.0.1 after it loaded (DNS rebinding) sends its own
    name as `Host:`: on loopback the explorer answers loopback names only."""
    app = create_app(demo_home, DAGSTER)
    attacker = TestClient(app, base_url="http://rebind.example:3100")
    local = TestClient(app, base_url="http://localhost:3100")

    assert attacker.get("/api/experiments").status_code == 400
    assert attacker.get("/").status_code == 400
    assert local.get("/api/experiments").status_code == 200


def test_a_node_s_checks_are_the_dagster_checks_evaluated_on_its_records(client):
    """Meta-Harness's promoted round passes its checks; the round not promoted warns in
    `edit_adopted` (a warning, not a failure) with the ranking's reason; the seed has none."""
    tree = client.get("/api/experiments/meta-harness-demo/tree").json()
    by_outcome = {n["outcome"]: n for n in tree["nodes"]}
    checks = {
        outcome: {
            c["name"]: c
            for c in client.get(f"/api/experiments/meta-harness-demo/nodes/{n['id']}").json()[
                "checks"
            ]
        }
        for outcome, n in by_outcome.items()
    }
    assert checks["seed"] == {}
    assert set(checks["promoted"]) == {
        "content_not_contaminated",
        "behaviour_consistent_with_parent",
        "edit_adopted",
        "edit_within_declared_paths",
    }
    assert {c["status"] for c in checks["promoted"].values()} == {"passed"}
    warned = checks["rejected"]["edit_adopted"]
    assert (warned["status"], warned["severity"]) == ("warning", "warn")
    assert warned["summary"] == f"rejected: {by_outcome['rejected']['reason']}"
    content = checks["rejected"]["content_not_contaminated"]
    assert content["metadata"]["snapshot_id"] == by_outcome["rejected"]["snapshot_id"]
    assert content["source"] == "its contamination verdict"
