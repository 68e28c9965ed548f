"""A fork in the explorer: listed with its origin, its tree naming the candidate of the
origin it started from (the lineage across experiments), on real git stores."""

from __future__ import annotations

from starlette.testclient import TestClient

from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.experiment.fork import fork_overrides, pinned
from flashrsi_dagster.explorer.server import create_app
from tests.experiment.origins import config_at, origin


def test_a_fork_is_listed_and_its_tree_names_the_origin_candidate_it_started_from(tmp_path):
    home = tmp_path / "home"
    _, _, child = origin(home, "origin")
    config = pinned(config_at(home, "fork", *fork_overrides("origin", "r001.c0")))
    algorithm = open_algorithm(open_experiment(config), log=lambda _: None)
    algorithm.seed()
    algorithm.close()
    client = TestClient(create_app(home, None), base_url="http://127.0.0.1")

    listed = {e["name"]: e for e in client.get("/api/experiments").json()}
    tree = client.get("/api/experiments/fork/tree").json()

    assert listed["fork"]["forked_from"] == "origin" and "forked_from" not in listed["origin"]
    assert tree["forked_from"] == {
        "experiment": "origin",
        "candidate": "r001.c0",
        "snapshot": child.id,
        "eval_sets": "same",
    }
    assert client.get("/api/experiments/origin/tree").json()["forked_from"] is None
    assert "forkedFrom" in client.get("/static/explorer.js").text
