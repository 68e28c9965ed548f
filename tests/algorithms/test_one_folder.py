"""An algorithm is one folder and one registry line: `tests/algorithms/random_search`, named
in `FLASHRSI_ALGORITHMS` and nowhere else, is validated, appears in the Dagster definitions
with its assets, jobs, partitions and checks, and runs under `flashrsi run` to its sealed test
on the offline model simulator. Every process here is a fresh one with that environment, as
the CLI, the code location and its run workers each read the registry once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.registry import PLUGINS_ENV

ROOT = Path(__file__).resolve().parents[2]
FLASHRSI = str(Path(sys.executable).parent / "flashrsi")
CONFIG = ROOT / "tests" / "algorithms" / "random_search" / "example.yaml"
REGISTERED = "random_search=tests.algorithms.random_search"

DEFINITIONS = """
import json
from flashrsi_dagster.definitions import defs as code_location
defs = code_location()
graph = defs.resolve_asset_graph()
jobs = {j.name: j for j in defs.resolve_all_job_defs()}
print(json.dumps({
    "assets": sorted(k.to_user_string() for k in graph.get_all_asset_keys()),
    "checks": sorted(k.to_user_string() for k in graph.asset_check_keys),
    "jobs": sorted(jobs),
    "partitions": {
        name: str(jobs[name].partitions_def) for name in ("random_search", "random_search_finalize")
    },
}))
"""


def flashrsi(*args: str, plugins: str = REGISTERED) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FLASHRSI, *args], **_where(plugins))


def _where(plugins: str) -> dict:
    env = {**os.environ, PLUGINS_ENV: plugins, "PYTHONPATH": str(ROOT)}
    return {"cwd": ROOT, "env": env, "capture_output": True, "text": True, "timeout": 1200}


def test_validate_accepts_a_config_naming_the_registered_algorithm(tmp_path):
    result = flashrsi("validate", "--config", str(CONFIG), "--experiment.home", str(tmp_path))

    assert result.returncode == 0, result.stderr
    assert "algorithm:\n  name: random_search\n  rounds: 3\n" in result.stdout
    assert "# ok: random_search (rounds=3" in result.stderr


def test_the_algorithm_is_unknown_without_its_registry_line():
    result = flashrsi("validate", "--config", str(CONFIG), plugins="")

    assert result.returncode == 2
    assert "algorithm.name (line 17): expected one of:" in result.stderr
    assert "(got random_search)" in result.stderr


def test_the_dagster_definitions_hold_its_assets_jobs_partitions_and_checks():
    result = subprocess.run([sys.executable, "-c", DEFINITIONS], **_where(REGISTERED))

    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.splitlines()[-1])
    assert {
        "random_search/round",
        "random_search/promotion",
        "random_search/sealed_test_score",
    } <= set(found["assets"])
    assert "meta_harness/promotion" in found["assets"]  # beside the built-in ones
    assert {"random_search", "random_search_finalize"} <= set(found["jobs"])
    assert {
        "random_search/round:score_in_unit_interval",
        "random_search/round:content_not_contaminated",
        "random_search/sealed_test_score:evaluated_once_after_promotion",
        "random_search/sealed_test_score:splits_disjoint",
    } <= set(found["checks"])
    rounds, finalize = found["partitions"].values()
    assert "random_search_candidate" in rounds and "random_search_experiment" in rounds
    assert "random_search_experiment" in finalize


def test_flashrsi_run_takes_it_to_the_sealed_test_and_resume_then_does_nothing(tmp_path):
    home = tmp_path / "home"
    args = ("--config", str(CONFIG), "--benchmark.limit", "9", "--experiment.home", str(home))

    result = flashrsi("run", *args)

    assert result.returncode == 0, result.stderr[-3000:]
    folder = home / "random-search-demo" / "records" / "random_search"
    rounds = [json.loads((folder / f"round-{k:03d}.json").read_text()) for k in range(4)]
    assert [r["status"] for r in rounds] == ["evaluated"] * 4
    assert rounds[0]["edit"] is None and all(r["edit"] in (0, 1, 2) for r in rounds[1:])
    assert len({r["snapshot_id"] for r in rounds}) == 4  # each round a snapshot of its own
    promotion = json.loads((folder / "promotion.json").read_text())
    assert promotion["dev_score"] == max(r["dev_score"] for r in rounds)
    test = json.loads((folder / "test.json").read_text())
    assert test["snapshot_id"] == promotion["snapshot_id"]
    assert f"sealed test: {test['test_score']:.3f} over 9 tasks" in result.stdout
    ledger = home / "random-search-demo" / "records" / "ledger.jsonl"
    entries = [json.loads(line) for line in ledger.read_text().splitlines()]
    adopted = [e for e in entries if e["decision"] == "adopt"]
    assert [e["candidate"]["snapshot_id"] for e in adopted] == [promotion["snapshot_id"]]
    assert {e["algorithm"] for e in entries} == {"random_search"}

    chain = (home / "random-search-demo" / "records" / "chain.head").read_text()
    again = flashrsi("resume", "--experiment", "random-search-demo", "--home", str(home))

    assert again.returncode == 0, again.stderr[-3000:]
    assert "==" not in again.stdout  # no step was run
    assert (home / "random-search-demo" / "records" / "chain.head").read_text() == chain


@pytest.mark.parametrize(
    ("plugins", "said"),
    [
        (
            "random_search=tests.algorithms.nowhere",
            "algorithm 'random_search': no package 'tests.algorithms.nowhere' to import "
            f"(see {PLUGINS_ENV})",
        ),
        (
            "random_search=tests.algorithms",
            "algorithm 'random_search': tests.algorithms declares no "
            "`ALGORITHM = AlgorithmEntry(...)`",
        ),
        ("random_search", f"{PLUGINS_ENV}: 'random_search' is not `name=package.path`"),
        (
            "meta_harness=tests.algorithms.random_search",
            f"{PLUGINS_ENV}: 'meta_harness' is a built-in algorithm",
        ),
    ],
)
def test_a_registry_line_that_names_no_algorithm_is_one_line_and_exit_2(plugins, said):
    result = flashrsi("validate", "--config", str(CONFIG), plugins=plugins)

    assert result.returncode == 2
    assert result.stderr == f"error: {said}\n"
