"""The Dagster UI on two finished demo experiments: a real `dagster-webserver` and daemon on the
home `flashrsi run` wrote, the code location served by our code server as under `flashrsi ui`,
read through GraphQL and through Debian's headless Chromium.

Every page the test looks at is saved as a screenshot (and its DOM) under a folder the run
prints, copied to `$FLASHRSI_UI_SCREENSHOTS` when set; what a screenshot should show is also
asserted on the page's rendered text, since a picture alone cannot fail."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, urlencode

import dagster as dg
import pytest
import yaml

from flashrsi_dagster.deployment.code_server import CodeServer
from flashrsi_dagster.deployment.instance import instance_dir
from flashrsi_dagster.orchestration.resources import ExperimentsResource
from tests.conftest import PATIENCE, free_port, wait_until
from tests.deployment.chromium import CHROMIUM, Chromium

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"
MODULAR = Path(__file__).parents[2] / "examples" / "modular_rsi.yaml"
MODULAR_DEMO = "modular-rsi-demo"
EVOLVER = Path(__file__).parents[2] / "examples" / "evolver.yaml"
EVOLVER_DEMO = "evolver-demo"
EVOLVER_LIMITS = (  # the demo cut down: 12 train tasks, one WHY x two candidates, one round,
    # each task run once (K = 1: the same candidates, gates and decision as at the demo's K = 3,
    # the offline model being deterministic; a third of the rollouts)
    *("--benchmark.split_counts.train", "12", "--benchmark.split_counts.test", "6"),
    *("--algorithm.max_why_per_round", "1", "--algorithm.candidates_per_why", "2"),
    *("--algorithm.max_rounds", "1", "--algorithm.patience", "1", "--algorithm.k", "1"),
)
BIN = Path(sys.executable).parent
DEMO, OTHER, FROM_UI = "meta-harness-demo", "other", "from-ui"
GROUP_ASSETS = ["snapshot", "trajectories", "scores", "failure_map", "paired_stats", "promotion"]
CHECKS = {
    "snapshot": {"edit_within_declared_paths", "content_not_contaminated"},
    "scores": {"score_in_unit_interval", "behaviour_consistent_with_parent", "edit_adopted"},
    "sealed_test_score": {"evaluated_once_after_promotion", "splits_disjoint", "dev_test_gap"},
}
TICK = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="needs Debian's chromium (make test installs it where apt is available)",
    ),
    pytest.mark.slow,  # four experiments, a webserver and a daemon before the first page
]


@dataclass(frozen=True)
class UI:
    """The webserver on a home; the code location runs in `root`, the folder holding it."""

    url: str
    root: Path
    location: str
    repository: str

    @property
    def home(self) -> Path:
        return self.root / ".flashrsi"

    @property
    def code(self) -> str:
        """The code location's prefix in the UI's URLs."""
        return f"/locations/{self.repository}@{self.location}"

    def gql(self, query: str, **variables) -> dict:
        request = urllib.request.Request(
            f"{self.url}/graphql",
            data=json.dumps({"query": query, "variables": variables}).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            body = json.loads(response.read())
        assert "errors" not in body, body["errors"]
        return body["data"]


def _flashrsi_run(
    root: Path, config: Path, *overrides: str, limits: tuple[str, ...] = ()
) -> tuple[subprocess.Popen, Path]:
    """`flashrsi run` started on the home under `root`; its output goes to the log returned."""
    limits = limits or ("--benchmark.limit", "4", "--algorithm.max_steps", "1")
    command = [str(BIN / "flashrsi"), "run", "--config", str(config), *limits, *overrides]
    command += ["--experiment.home", str(root / ".flashrsi")]
    log = root / f"run-{len(list(root.glob('run-*.log')))}.log"
    with log.open("w") as out:  # the child keeps its own descriptor
        return subprocess.Popen(command, cwd=root, stdout=out, stderr=subprocess.STDOUT), log


def _all_succeed(runs: list[tuple[subprocess.Popen, Path]]) -> None:
    """Wait for every run; fail with a failed one's output (the others are stopped)."""
    try:
        for run, log in runs:
            run.wait(timeout=PATIENCE * 4)
            assert run.returncode == 0, log.read_text()[-5000:]
    finally:
        for run, _ in runs:
            if run.poll() is None:
                run.kill()
                run.wait()


@contextlib.contextmanager
def _process(command: list[str], root: Path, log: str):
    env = {**os.environ, "DAGSTER_HOME": str(root / ".flashrsi" / ".dagster")}
    with open(root / log, "wb") as out:
        process = subprocess.Popen(
            command, cwd=root, env=env, stdout=out, stderr=out, start_new_session=True
        )
    try:
        yield process
    finally:
        os.killpg(process.pid, 15)
        process.wait(timeout=60)


@contextlib.contextmanager
def _code_server(root: Path):
    """The code location served as `flashrsi ui` serves it, to the webserver and the daemon
    both (`workspace.yaml` in `root`): our code server, whose run workers start warm
    (`code_server.py`), not a server of Dagster's own for each, each run a cold process."""
    env = {**os.environ, "DAGSTER_HOME": str(root / ".flashrsi" / ".dagster")}
    server = CodeServer(root / ".flashrsi", env)
    server.start()
    try:
        (root / "workspace.yaml").write_text(server.workspace())
        yield
    finally:
        server.close()


def _wait_for(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        assert server.poll() is None, log.read_text()[-3000:]
        try:
            urllib.request.urlopen(f"{url}/server_info", timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"the webserver did not answer:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """Four experiments (two Meta-Harness, a ModularRSI, an Evolver) run at once with `flashrsi
    run` into one home, then the webserver and the daemon (which dequeues runs launched from
    the UI, as under `flashrsi ui`) on it. The example is copied beside the home: relative
    config files resolve there, as in a checkout."""
    root = tmp_path_factory.mktemp("ui")
    config = root / "examples" / EXAMPLE.name
    config.parent.mkdir()
    shutil.copyfile(EXAMPLE, config)
    # the home's instance made first (two first uses at once race to create its SQLite
    # tables), then the four runs at once, as several `flashrsi run`s may drive one home
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGSTER_HOME", str(instance_dir(root / ".flashrsi")))
        dg.DagsterInstance.get().dispose()
    _all_succeed(
        [
            _flashrsi_run(root, config),
            _flashrsi_run(root, config, "--experiment.name", OTHER),
            _flashrsi_run(root, MODULAR, limits=("--benchmark.limit", "9")),
            _flashrsi_run(root, EVOLVER, limits=EVOLVER_LIMITS),
        ]
    )
    # where the home's runs execute: what a run launched from the UI is given (in process
    # here, as without the file)
    (root / ".flashrsi" / "execution.yaml").write_text("in_process: {}\n")
    port, workspace = free_port(), ["-w", str(root / "workspace.yaml")]
    webserver = [str(BIN / "dagster-webserver"), *workspace, "-h", "127.0.0.1", "-p", str(port)]
    daemon = [str(BIN / "dagster-daemon"), "run", *workspace]
    with (
        _code_server(root),
        _process(webserver, root, "webserver.log") as server,
        _process(daemon, root, "daemon.log"),
    ):
        url = f"http://127.0.0.1:{port}"
        _wait_for(url, server, root / "webserver.log")
        probe = UI(url, root, "", "")
        probe.gql("mutation { setNuxSeen }")  # the newsletter dialog would cover every page
        (entry,) = probe.gql(
            "{ workspaceOrError { ... on Workspace { locationEntries { name "
            "locationOrLoadError { __typename ... on RepositoryLocation { repositories { name } } "
            "... on PythonError { message } } } } } }"
        )["workspaceOrError"]["locationEntries"]
        loaded = entry["locationOrLoadError"]
        assert loaded["__typename"] == "RepositoryLocation", loaded
        yield UI(url, root, entry["name"], loaded["repositories"][0]["name"])


def _shows(screens: Screens, check: str, status: str) -> bool:
    """Whether the open checks page shows `status` on `check`'s row."""
    return screens.browser.evaluate(f"{CHECK_STATUS}({json.dumps(check)})") == status


def _shows_on_a_fresh_look(screens: Screens, page: str, check: str, status: str, every=30.0):
    """`_shows`, the page opened again every `every` seconds it does not: under load, a page
    can render a row from the UI's cache before the check's last execution is in it, and then
    keep it (seen once: GraphQL said SUCCEEDED, the open page never did)."""
    looked = time.monotonic()

    def shows() -> bool:
        nonlocal looked
        if _shows(screens, check, status):
            return True
        if time.monotonic() - looked > every:
            screens.open(page, "Checks (", hides=("Loading",))
            looked = time.monotonic()
        return False

    return shows


class Screens:
    """The browser on the UI; every screenshot goes to `folder` (and to `keep`, if given)."""

    def __init__(self, browser: Chromium, url: str, folder: Path, keep: Path | None) -> None:
        self.browser, self.url, self.folder, self.keep = browser, url, folder, keep

    def open(self, path: str, *shows: str, hides: tuple[str, ...] = ()) -> str:
        return self.browser.open(self.url + path, *shows, hides=hides)

    def shot(self, name: str) -> None:
        png = self.folder / f"{name}.png"
        self.browser.save(png)
        assert png.stat().st_size > 10_000
        if self.keep is not None:
            self.keep.mkdir(parents=True, exist_ok=True)
            for kept in (png, png.with_suffix(".html")):
                shutil.copyfile(kept, self.keep / kept.name)


@pytest.fixture(scope="module")
def screens(ui, tmp_path_factory, request):
    folder = tmp_path_factory.mktemp("ui-screenshots")
    keep = os.environ.get("FLASHRSI_UI_SCREENSHOTS")
    browser = Chromium(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield Screens(browser, ui.url, folder, Path(keep) if keep else None)
    finally:
        browser.close()
        capture = request.config.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled():
            print(f"\nUI screenshots: {folder}" + (f" (and {keep})" if keep else ""))


def _partitions(ui: UI) -> dict[str, list[str]]:
    node = ui.gql(
        '{ assetNodeOrError(assetKey: {path: ["meta_harness", "snapshot"]}) { '
        "... on AssetNode { partitionKeysByDimension { name partitionKeys } } } }"
    )["assetNodeOrError"]
    return {d["name"]: d["partitionKeys"] for d in node["partitionKeysByDimension"]}


def _materializations(ui: UI, asset: str, partitions: list[str] | None = None) -> list[dict]:
    query = """query($key: AssetKeyInput!, $partitions: [String!]) {
      assetOrError(assetKey: $key) { ... on Asset {
        assetMaterializations(partitions: $partitions) { partition runId metadataEntries {
          label ... on MarkdownMetadataEntry { mdStr } ... on TextMetadataEntry { text }
          ... on UrlMetadataEntry { url } } } } } }"""
    key = {"path": ["meta_harness", asset]}
    asset_ = ui.gql(query, key=key, partitions=partitions)["assetOrError"]
    return asset_["assetMaterializations"]


def _metadata(materialization: dict) -> dict[str, str | None]:
    return {
        e["label"]: e.get("mdStr") or e.get("text") or e.get("url")
        for e in materialization["metadataEntries"]
    }


def test_the_asset_graph_and_the_partition_grid(ui, screens):
    partitions = _partitions(ui)
    assert partitions["candidate"] == ["r000.c0", "r001.c0"]
    assert {DEMO, OTHER} <= set(partitions["experiment"])

    graph = screens.open(
        f"{ui.code}/asset-groups/meta_harness", "sealed_test_score", hides=("Loading",)
    )
    screens.shot("0-asset-graph")
    assert all(name in graph for name in [*GROUP_ASSETS, "summary"])

    grid = screens.open("/assets/meta_harness/trajectories?view=partitions", "r001.c0", OTHER)
    screens.shot("0-trajectories-partitions")
    assert re.search(r"Materialized \(4\)", grid) and DEMO in grid


def test_a_candidates_page_shows_its_diff_and_its_workers_trajectory(ui, screens):
    partition = f"r001.c0|{DEMO}"
    (event,) = _materializations(ui, "snapshot", [partition])
    meta = _metadata(event)
    assert meta["diff"].count("diff --git a/prompts/system.md b/prompts/system.md") == 1
    added = next(line[1:] for line in meta["diff"].splitlines() if line.startswith("+-"))
    assert "Edited** (1): `prompts/system.md`" in meta["worker_activity"]
    answer = re.search(r"\*\*Answer\*\*\n```\n(.+)\n", meta["worker_trajectory"]).group(1)
    assert answer.startswith("Simulator worker: updated prompts/system.md")
    parent = f"r000.c0|{DEMO}"
    link = f"/assets/meta_harness/snapshot?view=partitions&partition={quote(parent)}"
    assert meta["parent"] == link

    page = f"/assets/meta_harness/snapshot?view=partitions&partition={quote(partition)}"
    screens.open(page, "diff --git", partition)
    screens.shot("1-snapshot-diff")
    browser = screens.browser
    assert browser.cell("snapshot_id") == meta["snapshot_id"]  # this candidate, not the latest
    assert added in browser.cell("diff")
    assert browser.cell("worker_activity") == browser.cell("worker_trajectory") == "[Show Markdown]"

    browser.click("[Show Markdown]", row="worker_activity")
    assert "Edited (1): prompts/system.md" in browser.wait("tool calls", "Steps")
    screens.shot("1-worker-activity")
    screens.open(page, "worker_trajectory")
    browser.click("[Show Markdown]", row="worker_trajectory")
    assert "worker-1" in browser.wait(answer, "tool call editor")
    screens.shot("1-worker-trajectory")

    screens.open(link, parent, "snapshot_id")  # the link opens the parent's partition
    assert browser.cell("snapshot_id") == meta["parent_id"]


def test_each_experiments_chart_names_that_experiment_only(ui, screens):
    events = _materializations(ui, "summary")
    assert {e["partition"] for e in events} >= {DEMO, OTHER}
    for event in events:
        name, chart = event["partition"], _metadata(event)["chart"]
        assert re.findall(r"\*\*`(.+?)`\*\*", chart) == [name], chart
        assert all(f"`{other}`" not in chart for other in (DEMO, OTHER) if other != name)

    for name, other in ((DEMO, OTHER), (OTHER, DEMO)):
        screens.open(
            f"/assets/meta_harness/summary?view=partitions&partition={name}",
            f"{name}: 2 rounds",
            "promoted: round 1",
        )
        screens.shot(f"2-summary-{name}")
        chart = screens.browser.cell("chart")
        assert chart.startswith(f"{name}: 2 rounds") and f"{other}:" not in chart
        assert screens.browser.cell("rounds") == "2"


CHECK_EXECUTIONS = """query($key: AssetKeyInput!, $check: String!) {
  assetCheckExecutions(assetKey: $key, checkName: $check, limit: 20) {
    status runId evaluation { success severity metadataEntries {
      label ... on FloatMetadataEntry { floatValue } ... on TextMetadataEntry { text } } } } }"""
CHECKS_OF = """query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) {
  ... on AssetNode { assetChecksOrError { ... on AssetChecks { checks { name } } } } } }"""
CHECK_STATUS = """((name) => {  // a long name shows cut in the middle, whole in its title
  const title = document.querySelector(`[title="${name}"]`);
  return title ? title.parentElement.innerText.trim().split('\\n').pop() : null;
})"""


def _dev_test_gaps(ui: UI) -> dict[str, float]:
    """The promoted dev score minus the sealed test score, per experiment, from the records."""
    gaps = {}
    for name in (DEMO, OTHER):
        records = ui.home / name / "records" / "meta_harness"
        promotion = json.loads((records / "promotion.json").read_text())
        test = json.loads((records / "test.json").read_text())
        gaps[name] = promotion["dev_score"] - test["test_score"]
    return gaps


def _gap_check_status(runs: list[dict], gaps: list[float], threshold: float) -> str:
    """The gap check warns (FAILED, severity WARN) exactly when a gap exceeds the threshold;
    returns the status of the latest run, the one the Checks tab shows."""
    figures = [
        {
            e["label"]: e["floatValue"]
            for e in r["evaluation"]["metadataEntries"]
            if "floatValue" in e
        }
        for r in runs
    ]
    assert sorted(f["dev_test_gap"] for f in figures) == pytest.approx(gaps)
    judged = [
        e["text"]
        for r in runs
        for e in r["evaluation"]["metadataEntries"]
        if e["label"] == "partition"
    ]
    assert sorted(judged) == sorted([DEMO, OTHER])  # each result names its experiment
    for run, figure in zip(runs, figures, strict=True):
        assert figure["threshold"] == threshold and run["evaluation"]["severity"] == "WARN"
        passed = figure["dev_test_gap"] <= threshold
        assert run["status"] == ("SUCCEEDED" if passed else "FAILED"), run
    return runs[0]["status"]


def test_the_asset_checks_pass_and_the_gap_check_says_what_the_records_say(ui, screens):
    threshold = ExperimentsResource.model_fields["dev_test_gap_warning"].default
    gaps = sorted(_dev_test_gaps(ui).values())
    for asset, checks in CHECKS.items():
        key = {"path": ["meta_harness", asset]}
        node = ui.gql(CHECKS_OF, key=key)["assetNodeOrError"]
        assert {c["name"] for c in node["assetChecksOrError"]["checks"]} == checks
        shown = {}
        for check in checks - {"edit_adopted"}:  # a candidate's outcome: its own test
            runs = ui.gql(CHECK_EXECUTIONS, key=key, check=check)["assetCheckExecutions"]
            assert len(runs) == (2 if asset == "sealed_test_score" else 4)  # a run per step
            if check == "dev_test_gap":
                shown[check] = _gap_check_status(runs, gaps, threshold)
            else:
                assert {r["status"] for r in runs} == {"SUCCEEDED"}, (check, runs)
                shown[check] = "SUCCEEDED"

        page = f"/assets/meta_harness/{asset}?view=checks"
        screens.open(page, f"Checks ({len(checks)})", hides=("Loading",))
        screens.shot(f"3-checks-{asset}")
        for check, status in shown.items():  # each row's status, once the page has it
            shows = _shows_on_a_fresh_look(screens, page, check, status.capitalize())
            wait_until(shows, f"{asset}: {check} shown as {status.capitalize()}")


RUNS = """query($filter: RunsFilter) { runsOrError(filter: $filter) { ... on Runs {
  results { runId status tags { key value } } } } }"""


def test_flashrsi_runs_are_listed_under_their_job(ui, screens):
    label = {"key": ".dagster/repository", "value": f"{ui.repository}@{ui.location}"}
    runs = ui.gql(RUNS, filter={"pipelineName": "meta_harness"})["runsOrError"]["results"]
    listed = ui.gql(RUNS, filter={"pipelineName": "meta_harness", "tags": [label]})
    assert len(runs) == 4 and {r["status"] for r in runs} == {"SUCCESS"}
    assert listed["runsOrError"]["results"] == runs  # what the job's Runs tab asks for
    experiments = [{t["key"]: t["value"] for t in r["tags"]}["flashrsi/experiment"] for r in runs]
    assert sorted(experiments) == sorted([DEMO, DEMO, OTHER, OTHER])

    ids = [r["runId"][:8] for r in runs]
    page = screens.open(f"{ui.code}/jobs/meta_harness/runs", *ids)
    screens.shot("4-job-runs")
    assert "No runs found" not in page and page.count("Success") >= 4


LAUNCH = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) {
  __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
  ... on RunConfigValidationInvalid { errors { message } } } }"""


def _wait_for_run(ui: UI, run_id: str, timeout: float = 300) -> str:
    deadline, status = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        query = "query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"
        status = ui.gql(query, id=run_id)["runOrError"]["status"]
        if status in ("SUCCESS", "FAILURE", "CANCELED"):
            return status
        time.sleep(1)
    return status


LAUNCHABLE = """[...document.querySelectorAll('button')]
  .some(b => b.innerText.trim() === 'Launch Run' && !b.disabled)"""


SENSOR = """query($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) {
  ... on Sensor { id sensorState { status } } } }"""
STOP_SENSOR = "mutation($id: String) { stopSensor(id: $id) { __typename } }"
FAILURE = """query($id: ID!) { logsForRun(runId: $id) { ... on EventConnection {
  events { __typename ... on RunFailureEvent { message } } } } }"""


def _runs_of(ui: UI, name: str) -> list[dict]:
    tags = [{"key": "flashrsi/experiment", "value": name}]
    return ui.gql(RUNS, filter={"tags": tags})["runsOrError"]["results"]


def _title(run: dict) -> str | None:
    return {t["key"]: t["value"] for t in run["tags"]}.get("flashrsi/about")


def test_an_experiment_started_from_the_launchpad(ui, screens):
    config = {
        "config_file": "examples/meta_harness.yaml",  # beside the home, as the default
        "name": FROM_UI,
        "overrides": ["--algorithm.max_steps", "1", "--benchmark.limit", "3"],
    }
    run_config = {"ops": {"create_experiment": {"config": config}}}
    setup = urlencode({"config": yaml.safe_dump(run_config, sort_keys=False)})
    page = screens.open(
        f"{ui.code}/jobs/start_experiment/playground/setup?{setup}", f"name: {FROM_UI}", "No errors"
    )
    screens.browser.wait_for(LAUNCHABLE)  # enabled once the config is validated
    screens.shot("5-launchpad-start-experiment")
    assert "config_file: examples/meta_harness.yaml" in page and "create_experiment" in page
    assert not (ui.home / FROM_UI).exists()

    selector = {
        "repositoryLocationName": ui.location,
        "repositoryName": ui.repository,
        "jobName": "start_experiment",
    }
    params = {"selector": selector, "runConfigData": run_config}
    launched = ui.gql(LAUNCH, params=params)["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    status = _wait_for_run(ui, launched["run"]["runId"])
    logs = [(ui.root / log).read_text()[-2000:] for log in ("daemon.log", "webserver.log")]
    assert status == "SUCCESS", "\n".join(logs)

    assert (ui.home / FROM_UI / "run_meta.json").is_file()
    partitions = _partitions(ui)
    assert FROM_UI in partitions["experiment"]
    assert {"r000.c0", "r001.c0"} <= set(partitions["candidate"])

    # Nobody turned the round driver on: it is on from the start and runs the seed's round.
    sensor = {**selector, "sensorName": "round_driver"}
    sensor.pop("jobName")
    driver = ui.gql(SENSOR, selector=sensor)["sensorOrError"]
    assert driver["sensorState"]["status"] == "RUNNING"
    seed = f"{FROM_UI} r000.c0 evaluate_seed"
    wait_until(lambda: any(_title(r) == seed for r in _runs_of(ui, FROM_UI)), "the seed's run")
    (run,) = [r for r in _runs_of(ui, FROM_UI) if _title(r) == seed]
    assert _wait_for_run(ui, run["runId"]) == "SUCCESS"
    # stopped, so that the other tests see a still home (its runs would go on otherwise)
    ui.gql(STOP_SENSOR, id=driver["id"])
    titles = {_title(r) for r in _runs_of(ui, FROM_UI)}
    assert f"{FROM_UI} start" in titles  # the Runs list names each run, not just its id


def test_a_launchpad_config_the_project_refuses_fails_at_launch_with_one_line(ui, screens):
    """`max_steps: lots` is a list of strings to the Launchpad; the run queue loads it as the
    run is submitted and fails the run with the loader's line, before a run worker starts."""
    bad = {"name": "lots", "overrides": ["--algorithm.max_steps", "lots"]}
    selector = {
        "repositoryLocationName": ui.location,
        "repositoryName": ui.repository,
        "jobName": "start_experiment",
    }
    params = {
        "selector": selector,
        "runConfigData": {"ops": {"create_experiment": {"config": bad}}},
    }
    launched = ui.gql(LAUNCH, params=params)["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]
    assert _wait_for_run(ui, run_id) == "FAILURE"
    events = ui.gql(FAILURE, id=run_id)["logsForRun"]["events"]
    (message,) = [e["message"] for e in events if e["__typename"] == "RunFailureEvent"]
    assert message == (
        "examples/meta_harness.yaml: invalid config: algorithm.max_steps (set by "
        "--algorithm.max_steps): input should be a valid integer, unable to parse string as "
        "an integer (got lots)"
    )
    assert not any(e["__typename"] == "RunStartEvent" for e in events)  # no run worker
    assert not (ui.home / "lots").exists()
    screens.open(f"/runs/{run_id}", "invalid config")
    screens.shot("5-launch-refused")


SCHEDULE = """query($selector: ScheduleSelector!) { scheduleOrError(scheduleSelector: $selector) {
  ... on Schedule { pipelineName } } }"""
DRY_RUN = """mutation($selector: ScheduleSelector!, $at: Float!) {
  scheduleDryRun(selectorData: $selector, timestamp: $at) { __typename
    ... on DryRunInstigationTick { evaluationResult { skipReason error { message }
      dynamicPartitionsRequests { partitionKeys }
      runRequests { jobName runKey runConfigYaml } } } } }"""


def _state(ui: UI) -> tuple:
    """What starting an experiment changes: folders, partitions, runs."""
    runs = ui.gql(RUNS, filter={})["runsOrError"]["results"]
    runs = [
        r
        for r in runs
        if {t["key"]: t["value"] for t in r["tags"]}.get("flashrsi/experiment") != FROM_UI
    ]  # the driver may finish one
    folders = sorted(p.name for p in ui.home.iterdir())
    return folders, _partitions(ui), sorted(r["runId"] for r in runs)


def test_previewing_the_nightly_schedule_creates_nothing(ui, screens):
    before = _state(ui)
    selector = {
        "repositoryLocationName": ui.location,
        "repositoryName": ui.repository,
        "scheduleName": "nightly_evolution",
    }
    schedule = ui.gql(SCHEDULE, selector=selector)["scheduleOrError"]
    assert schedule["pipelineName"] == "start_experiment"
    tick = ui.gql(DRY_RUN, selector=selector, at=TICK.timestamp())["scheduleDryRun"]
    result = tick["evaluationResult"]
    assert tick["__typename"] == "DryRunInstigationTick" and result["error"] is None, result
    (request,) = result["runRequests"]  # no job name: the schedule's own job
    nightly = f"{DEMO}-nightly-{TICK:%Y%m%d}"
    assert request["runKey"] == f"nightly:{nightly}"
    assert yaml.safe_load(request["runConfigYaml"])["ops"]["create_experiment"]["config"] == {
        "config_file": "examples/meta_harness.yaml",
        "name": nightly,
        "overrides": [],
    }
    assert not result["dynamicPartitionsRequests"]

    screens.open(
        f"{ui.code}/schedules/nightly_evolution", "Preview tick result", "start_experiment"
    )
    screens.browser.click("Preview tick result")
    screens.browser.wait("Select an evaluation time")
    screens.browser.click("Continue")
    preview = screens.browser.wait("1 run requests", "Requested runs (1)")
    screens.shot("6-schedule-preview")
    assert "start_experiment" in preview

    after = _state(ui)
    assert after == before and not any("nightly" in f for f in after[0])


def test_the_modular_rsi_branch_grid_and_a_rejected_edits_review(ui, screens):
    grid = screens.open(
        "/assets/modular_rsi/gates?view=partitions", "r000.agent_loop", "r000.integration"
    )
    screens.shot("6-modular-rsi-branch-grid")
    assert MODULAR_DEMO in grid and "r001.context_management" in grid
    query = """query($partitions: [String!]) {
      assetOrError(assetKey: {path: ["modular_rsi", "gates"]}) { ... on Asset {
        assetMaterializations(partitions: $partitions) { metadataEntries { label
          ... on MarkdownMetadataEntry { mdStr } ... on TextMetadataEntry { text } } } } } }"""
    partition = f"r000.agent_loop|{MODULAR_DEMO}"
    (event,) = ui.gql(query, partitions=[partition])["assetOrError"]["assetMaterializations"]
    meta = _metadata(event)
    assert meta["outcome"] == "rejected" and "review gate" in meta["reason"]
    assert "responsibility" in meta["review_text"] and "**fail**" in meta["gates"]
    screens.open(
        f"/assets/modular_rsi/gates?view=partitions&partition={quote(partition)}", "review_text"
    )
    screens.shot("6-modular-rsi-rejected-edit")


CHECK_CELLS = """query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { ... on AssetNode {
  assetCheckOrError(checkName: "edit_adopted") { ... on AssetCheck {
    partitionKeysByDimension { name partitionKeys }
    partitionStatuses { ... on AssetCheckMultiPartitionStatuses { primaryDimensionName ranges {
      primaryDimStartKey primaryDimEndKey secondaryDim {
        ... on AssetCheckDefaultPartitionStatuses { succeededPartitions failedPartitions } } } } }
  } } } } }"""
OUTCOMES = """{ assetOrError(assetKey: {path: ["modular_rsi", "gates"]}) { ... on Asset {
  assetMaterializations { partition metadataEntries { label ... on TextMetadataEntry { text } } }
  } } }"""


def _check_cells(ui: UI, asset: list[str], experiment: str) -> dict[str, str]:
    """Each of `experiment`'s cells in the `edit_adopted` check's own grid on `asset`:
    succeeded or failed."""
    check = ui.gql(CHECK_CELLS, key={"path": asset})["assetNodeOrError"]["assetCheckOrError"]
    keys = {d["name"]: d["partitionKeys"] for d in check["partitionKeysByDimension"]}
    statuses = check["partitionStatuses"]
    primary = keys[statuses["primaryDimensionName"]]
    cells = {}
    for r in statuses["ranges"]:  # runs of primary keys with the same secondary statuses
        span = primary[
            primary.index(r["primaryDimStartKey"]) : primary.index(r["primaryDimEndKey"]) + 1
        ]
        for status in ("succeeded", "failed"):
            for other in r["secondaryDim"][f"{status}Partitions"]:
                cells.update({f"{key}|{other}": status for key in span})
    return {p: c for p, c in cells.items() if p.endswith(f"|{experiment}")}


def test_the_modular_rsi_check_grid_tells_a_rejected_step_from_an_adopted_one(ui, screens):
    """`edit_adopted` is partitioned: its grid has a cell per step, failed (a warning) where
    the step's edit was rejected or empty and passed where it was adopted, where the asset's
    own grid is green for every step that ran."""
    outcomes = {
        m["partition"]: _metadata(m)["outcome"]
        for m in ui.gql(OUTCOMES)["assetOrError"]["assetMaterializations"]
        if m["partition"].endswith(f"|{MODULAR_DEMO}")
    }
    cells = _check_cells(ui, ["modular_rsi", "gates"], MODULAR_DEMO)
    assert cells == {p: "succeeded" if o == "accepted" else "failed" for p, o in outcomes.items()}
    assert cells[f"r000.agent_loop|{MODULAR_DEMO}"] == "failed"  # its review gate rejected it
    assert "succeeded" in cells.values()
    _check_partitions(screens, "modular_rsi/gates", "Passed", "Failed")
    screens.shot("6-modular-rsi-edit-adopted-by-partition")


def _check_partitions(screens: Screens, asset: str, *shows: str) -> str:
    """The `edit_adopted` check's page, its Partitions tab open (a partitioned check's)."""
    screens.open(f"/assets/{asset}?view=checks&checkDetail=edit_adopted", "Execution history")
    clicked = screens.browser.evaluate(TAB.replace("LABEL", "Partitions"))
    assert clicked, "no Partitions tab on the check's page"
    return screens.browser.wait(*shows)


TAB = """(() => {  // the check detail's own tab, not the asset's tab of the same name
  const tabs = [...document.querySelectorAll('[role="tab"]')]
    .filter((t) => t.innerText.trim() === "LABEL");
  if (!tabs.length) return false;
  tabs[tabs.length - 1].click();
  return true;
})()"""


def test_the_evolver_candidate_grid_its_gates_and_the_retention_report(ui, screens):
    grid = screens.open("/assets/evolver/gates?view=partitions", "r001.w1c1", "r001.w1c2")
    screens.shot("7-evolver-candidate-grid")
    assert EVOLVER_DEMO in grid
    query = """query($partitions: [String!]) {
      assetOrError(assetKey: {path: ["evolver", "gates"]}) { ... on Asset {
        assetMaterializations(partitions: $partitions) { metadataEntries { label
          ... on MarkdownMetadataEntry { mdStr } ... on TextMetadataEntry { text } } } } } }"""
    partition = f"r001.w1c1|{EVOLVER_DEMO}"
    (event,) = ui.gql(query, partitions=[partition])["assetOrError"]["assetMaterializations"]
    meta = _metadata(event)
    assert meta["state"] in ("in_library", "promoted_to_baseline", "pruned_at_confirm")
    assert "gate_f" in meta["gates"] and "gate_2" in meta["gates"]
    screens.open(
        f"/assets/evolver/gates?view=partitions&partition={quote(partition)}", "credited_2sigma"
    )
    screens.shot("7-evolver-gates")
    query = query.replace('"gates"', '"sealed_test_score"')
    (event,) = ui.gql(query, partitions=[EVOLVER_DEMO])["assetOrError"]["assetMaterializations"]
    report = _metadata(event)
    assert "vanilla" in report["retention"] and report["eval_set"] == "test/e1"
    page = f"/assets/evolver/sealed_test_score?view=partitions&partition={EVOLVER_DEMO}"
    screens.open(page, "retained", "vanilla")
    screens.shot("7-evolver-retention")


ASSET_JOBS = """query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { ... on AssetNode {
  jobNames assetChecksOrError { ... on AssetChecks { checks { name jobNames } } } } } }"""
PARTITION_TAGS = """query($location: String!, $repository: String!, $job: String!,
  $partition: String!, $keys: [AssetKeyInput!]!) {
  pipelineOrError(params: {pipelineName: $job, repositoryName: $repository,
    repositoryLocationName: $location}) { ... on Pipeline {
      partition(partitionName: $partition, selectedAssetKeys: $keys) {
        runConfigOrError { ... on PartitionRunConfig { yaml } }
        tagsOrError { ... on PartitionTags { results { key value } } } } } } }"""
LAUNCH_PIPELINE = """mutation($params: ExecutionParams!) {
  launchPipelineExecution(executionParams: $params) { __typename
    ... on LaunchRunSuccess { run { runId pipelineName } } ... on PythonError { message } } }"""
RUN_JOB = """query($id: ID!) { runOrError(runId: $id) {
  ... on Run { pipelineName runConfigYaml } } }"""
EVENTS = """query($id: ID!) { logsForRun(runId: $id) { ... on EventConnection { events {
  __typename ... on MessageEvent { message }
  ... on ExecutionStepFailureEvent { error { message } } } } } }"""


def test_materializing_a_partition_from_the_ui_runs_under_the_algorithms_job(ui, screens):
    """What the asset page's Materialize button sends for one partition (Dagster's
    `LaunchAssetExecutionButton` and `LaunchAssetChoosePartitionsDialog`): the first job the
    asset lists — Dagster's hidden asset job, which sorts first —, the partition's tags and
    config, the asset's checks in that job. The run queue makes the run again under
    `meta_harness`; the UI is given the new run. Last in this file: it adds a `meta_harness`
    run."""
    key = {"path": ["meta_harness", "snapshot"]}
    node = ui.gql(ASSET_JOBS, key=key)["assetNodeOrError"]
    job = node["jobNames"][0]  # `getCommonJob`: one asset, no preferred job
    assert job == "__ASSET_JOB" and "meta_harness" in node["jobNames"]
    partition = f"r001.c0|{OTHER}"
    where = {"location": ui.location, "repository": ui.repository}
    chosen = ui.gql(PARTITION_TAGS, **where, job=job, partition=partition, keys=[key])
    chosen = chosen["pipelineOrError"]["partition"]
    checks = node["assetChecksOrError"]["checks"]
    selector = {
        "repositoryLocationName": ui.location,
        "repositoryName": ui.repository,
        "pipelineName": job,
        "assetSelection": [key],
        "assetCheckSelection": [
            {"assetKey": key, "name": c["name"]} for c in checks if job in c["jobNames"]
        ],
    }
    params = {
        "mode": "default",
        "executionMetadata": {"tags": chosen["tagsOrError"]["results"]},
        "runConfigData": chosen["runConfigOrError"]["yaml"],
        "selector": selector,
    }
    launched = ui.gql(LAUNCH_PIPELINE, params=params)["launchPipelineExecution"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]

    assert launched["run"]["pipelineName"] == "meta_harness"
    status = _wait_for_run(ui, run_id)
    assert status == "SUCCESS", ui.gql(EVENTS, id=run_id)["logsForRun"]["events"][-12:]
    run = ui.gql(RUN_JOB, id=run_id)["runOrError"]
    assert run["pipelineName"] == "meta_harness"
    config = yaml.safe_load(run["runConfigYaml"])  # the home's executor: the form held none
    assert "execution" not in yaml.safe_load(params["runConfigData"] or "{}")
    assert config["execution"] == {"config": {"in_process": {}}}
    assert config["resources"]["experiments_home"]["config"]["home"] == str(ui.home.resolve())
    hidden = ui.gql(RUNS, filter={"pipelineName": job})["runsOrError"]["results"]
    assert hidden == []  # the launched run is not left behind
    assert run_id in [e["runId"] for e in _materializations(ui, "snapshot", [partition])]
    page = screens.open(
        f"/assets/meta_harness/snapshot?view=partitions&partition={quote(partition)}", run_id[:8]
    )
    screens.shot("8-rematerialized-under-its-job")
    assert re.search(r"\bJob\s+meta_harness\b", page), page[-2000:]
    runs = screens.open(f"{ui.code}/jobs/meta_harness/runs", run_id[:8])
    assert run_id[:8] in runs


def test_the_meta_harness_check_grid_tells_the_promoted_candidate_from_the_others(ui, screens):
    """Meta-Harness ranks its candidates at the promotion, a run of its own, which reports
    each one's outcome on its partition of `edit_adopted` on `scores`: the seed and the
    promoted candidate pass, the others fail (a warning: not promoted, with the ranking)."""
    query = """query($partitions: [String!]) {
      assetOrError(assetKey: {path: ["meta_harness", "promotion"]}) { ... on Asset {
        assetMaterializations(partitions: $partitions) { metadataEntries {
          label ... on IntMetadataEntry { intValue } } } } } }"""
    latest = ui.gql(query, partitions=[DEMO])["assetOrError"]["assetMaterializations"][0]
    promoted = next(e["intValue"] for e in latest["metadataEntries"] if e["label"] == "round")
    cells = _check_cells(ui, ["meta_harness", "scores"], DEMO)
    rounds = {int(p.split(".")[0][1:]) for p in cells}
    assert len(rounds) >= 2  # the seed and a candidate at least
    assert cells == {
        f"r{k:03d}.c0|{DEMO}": "succeeded" if k in (0, promoted) else "failed" for k in rounds
    }
    shows = ("Passed", "Failed") if "failed" in cells.values() else ("Passed",)
    _check_partitions(screens, "meta_harness/scores", *shows)
    screens.shot("3-meta-harness-edit-adopted-by-partition")
