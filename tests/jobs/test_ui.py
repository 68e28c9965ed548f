"""The Dagster UI on a finished demo experiment: a real webserver, real headless Chromium."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"
BIN = Path(sys.executable).parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="needs Debian's chromium (make test installs it where apt is available)",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _graphql(port: int, query: str) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["data"]


def _chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1400,900",
        "--virtual-time-budget=20000",
    ]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def webserver(tmp_path_factory):
    root = tmp_path_factory.mktemp("ui")
    home = root / ".flashrsi"
    run = subprocess.run(
        [
            str(BIN / "flashrsi"),
            "run",
            "--config",
            str(EXAMPLE),
            "--experiment.home",
            str(home),
            "--benchmark.limit",
            "4",
            "--algorithm.max_steps",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    port = _free_port()
    server = subprocess.Popen(
        [
            str(BIN / "dagster-webserver"),
            "-m",
            "flashrsi_dagster.definitions",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        cwd=root,
        env={**os.environ, "DAGSTER_HOME": str(home / ".dagster")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        yield port, root
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)


def test_graphql_shows_the_partitions_and_metadata(webserver):
    port, _ = webserver
    nodes = _graphql(
        port, "{ assetNodes { assetKey { path } partitionKeysByDimension { name partitionKeys } } }"
    )["assetNodes"]
    by_key = {"/".join(n["assetKey"]["path"]): n for n in nodes}
    rounds = {
        d["name"]: d["partitionKeys"] for d in by_key["trajectories"]["partitionKeysByDimension"]
    }
    assert rounds["round"] == ["meta-harness-demo.r000", "meta-harness-demo.r001"]
    assert rounds["candidate"] == ["c0"]
    events = _graphql(
        port,
        '{ assetOrError(assetKey: {path: ["snapshot"]}) { ... on Asset { '
        "assetMaterializations(limit: 5) { partition metadataEntries { "
        "label } } } } }",
    )["assetOrError"]["assetMaterializations"]
    assert len(events) == 2
    assert all("snapshot_id" in {e["label"] for e in m["metadataEntries"]} for m in events)


def test_chromium_renders_the_asset_graph_and_a_partitioned_asset(webserver, tmp_path):
    port, _ = webserver
    shot = tmp_path / "asset-graph.png"
    graph = _chromium(
        f"--screenshot={shot}",
        f"http://127.0.0.1:{port}/asset-groups/meta_harness",
        profile=tmp_path / "p1",
    )
    page = _chromium(
        "--dump-dom",
        f"http://127.0.0.1:{port}/assets/trajectories?view=partitions",
        profile=tmp_path / "p2",
    )

    assert graph.returncode == 0 and shot.stat().st_size > 10_000
    assert page.returncode == 0
    assert "trajectories" in page.stdout
    assert "meta-harness-demo.r001" in page.stdout or "Partitions" in page.stdout
    keep = Path(os.environ.get("FLASHRSI_UI_SCREENSHOT", tmp_path / "kept.png"))
    shutil.copyfile(shot, keep)


def _repository(port: int) -> tuple[str, str]:
    locations = _graphql(
        port,
        "{ workspaceOrError { ... on Workspace { locationEntries { name locationOrLoadError { "
        "... on RepositoryLocation { repositories { name } } } } } } }",
    )["workspaceOrError"]["locationEntries"]
    (entry,) = locations
    return entry["name"], entry["locationOrLoadError"]["repositories"][0]["name"]


def test_the_resources_and_the_launchpads_demo_defaults_are_served(webserver):
    port, _ = webserver
    location, repository = _repository(port)
    selector = f'repositoryName: "{repository}", repositoryLocationName: "{location}"'
    resources = _graphql(
        port,
        f"{{ repositoryOrError(repositorySelector: {{{selector}}}) {{ ... on Repository {{ "
        "allTopLevelResourceDetails { name } } } }",
    )["repositoryOrError"]["allTopLevelResourceDetails"]
    assert {r["name"] for r in resources} >= {
        "experiments_home",
        "snapshot_store",
        "target_agent",
        "worker_agent",
        "harbor",
        "offline_model",
        "io_manager",
    }
    schema = _graphql(
        port,
        f'{{ runConfigSchemaOrError(selector: {{pipelineName: "meta_harness", {selector}}}) '
        "{ ... on RunConfigSchema { rootDefaultYaml } } }",
    )["runConfigSchemaOrError"]["rootDefaultYaml"]
    assert "config_file: examples/meta_harness.yaml" in schema
    assert "max_steps: 2" in schema and "benchmark_limit: 9" in schema


LAUNCH = """
mutation($params: ExecutionParams!) {
  launchPipelineExecution(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""


def _gql(port: int, query: str, variables: dict) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query, "variables": variables}).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    assert "errors" not in body, body["errors"]
    return body["data"]


@contextlib.contextmanager
def _daemon(root: Path):
    daemon = subprocess.Popen(
        [str(BIN / "dagster-daemon"), "run", "-m", "flashrsi_dagster.definitions"],
        cwd=root,
        env={**os.environ, "DAGSTER_HOME": str(root / ".flashrsi" / ".dagster")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield daemon
    finally:
        os.killpg(daemon.pid, 15)
        daemon.wait(timeout=60)


def test_a_new_experiment_launched_as_from_the_launchpad_runs_its_round_0(webserver):
    port, root = webserver
    location, repository = _repository(port)
    selector = {"repositoryName": repository, "repositoryLocationName": location}
    added = _gql(
        port,
        "mutation($s: RepositorySelector!) { addDynamicPartition(repositorySelector: $s, "
        'partitionsDefName: "meta_harness_round", partitionKey: "from-ui.r000") { __typename } }',
        {"s": selector},
    )
    assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess"
    params = {
        "selector": {**selector, "pipelineName": "meta_harness"},
        "runConfigData": {
            "ops": {
                "snapshot": {
                    "config": {"config_file": str(EXAMPLE), "max_steps": 1, "benchmark_limit": 3}
                }
            }
        },
        "executionMetadata": {
            "tags": [
                {"key": "dagster/partition", "value": "c0|from-ui.r000"},
                {"key": "dagster/partition/candidate", "value": "c0"},
                {"key": "dagster/partition/round", "value": "from-ui.r000"},
            ]
        },
    }
    launched = _gql(port, LAUNCH, {"params": params})["launchPipelineExecution"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]

    with _daemon(root):  # dequeues the run, as under `dagster dev` / `flashrsi ui`
        deadline, status = time.monotonic() + 300, None
        while time.monotonic() < deadline:
            query = f'{{ runOrError(runId: "{run_id}") {{ ... on Run {{ status }} }} }}'
            status = _gql(port, query, {})["runOrError"]["status"]
            if status in ("SUCCESS", "FAILURE", "CANCELED"):
                break
            time.sleep(1)
    assert status == "SUCCESS"
    record = json.loads(
        (root / ".flashrsi" / "from-ui" / "records" / "meta_harness" / "round-000.json").read_text()
    )
    assert record["status"] == "evaluated" and record["dev_tasks"] == 3
