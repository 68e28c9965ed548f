"""Three experiments of four candidates a round, driven at once by three `flashrsi run`s on one
home whose Dagster instance is on PostgreSQL, under the run queue's limits (3 runs in all, 2
per experiment): the limits hold (the runs' start and end times in the instance), every step
ran once, every rollout is recorded once, the snapshot stores pass `git fsck`, the records
verify, and each experiment comes out as the same config run one step after another. While
they run, a real webserver on the instance lists the candidates' runs, queued and started,
with their candidate tags (what the Runs page shows)."""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading
from pathlib import Path

import dagster as dg
import pytest

from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.instance import TELEMETRY_OFF
from flashrsi_dagster.deployment.run_queue import RunLimits, run_queue
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.orchestration.resources import ExperimentsResource
from flashrsi_dagster.rollouts.record import RolloutRecord
from tests.conftest import free_port
from tests.deployment.test_ui import UI, _process, _wait_for
from tests.postgres import fresh_database, needs_postgres
from tests.run_wide import made_once

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"
FLASHRSI = str(Path(sys.executable).parent / "flashrsi")
NAMES = ("e1", "e2", "e3")
LIMITS = RunLimits(max_concurrent_runs=3, per_experiment=2, per_endpoint=3)
# the URL stays in the environment, never in the file
SETTINGS = "storage:\n  postgres:\n    postgres_url:\n      env: FLASHRSI_TEST_DAGSTER_PG\n"
OVERRIDES = [
    *("--benchmark.limit", "2", "--algorithm.max_steps", "1"),
    *("--algorithm.candidates_per_round", "4"),
]
RUNS = """query { runsOrError(filter: {tags: [{key: "flashrsi/driver", value: "1"}]}) {
  ... on Runs { results { runId status tags { key value } } } } }"""


def _config(home: Path, name: str):
    return load_config(
        EXAMPLE, [*OVERRIDES, "--experiment.home", str(home), "--experiment.name", name]
    )


def _watch(ui: UI, seen: dict, stop: threading.Event) -> None:
    """Every run the webserver lists, with each status it was seen in and its tags."""
    while not stop.wait(0.5):
        try:
            runs = ui.gql(RUNS)["runsOrError"]["results"]
        except OSError:
            continue
        for run in runs:
            tags = {t["key"]: t["value"] for t in run["tags"]}
            seen.setdefault(run["runId"], (tags, set()))[1].add(run["status"])


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    count = most = 0
    for _, step in edges:
        count += step
        most = max(most, count)
    return most


def _outcome(algorithm) -> dict:
    """What the search decided, without what differs between two runs of it (snapshot ids
    carry a commit time): per candidate its status, score and tree; the promotion; the test."""
    state, store = algorithm.read_state(), algorithm.experiment.snapshots
    return {
        "candidates": {
            (r.round, r.slot): (r.status, r.dev_score, store.get(r.snapshot_id).tree)
            for r in state.rounds
        },
        "promoted": (state.promotion.round, state.promotion.slot, state.promotion.dev_score),
        "test": state.test.test_score,
    }


def sequential(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict:
    """The outcome of the config, its steps one after another in this process, without Dagster:
    made once per test run, the reference of this file's test and `test_reconnect.py`'s (the
    experiment's name is the only difference between their configs, and nothing `_outcome`
    compares depends on it)."""

    def make(folder: Path) -> None:
        config = _config(folder / "home", NAMES[0])
        algorithm = open_algorithm(open_experiment(config), log=lambda _: None)
        try:
            while not (step := algorithm.next_step(algorithm.read_state())).finished:
                algorithm.do(step)
            (folder / "outcome.pickle").write_bytes(pickle.dumps(_outcome(algorithm)))
        finally:
            algorithm.close()

    folder = made_once(tmp_path_factory, worker_id, "meta-harness-4-candidates", make)
    return pickle.loads((folder / "outcome.pickle").read_bytes())


def _check_experiment(home: Path, name: str) -> dict:
    algorithm = ExperimentsResource.at(home).algorithm(name, log=lambda _: None)
    algorithm.experiment.records.verify()
    for r in algorithm.read_state().rounds:  # every dev rollout once
        ids = [
            t.task_id
            for t in RolloutRecord(algorithm.layout.rollouts(r.round, r.slot), None).load()
        ]
        assert len(ids) == 2 and len(set(ids)) == 2, (r.round, r.slot, ids)
    fsck = subprocess.run(
        ["git", "fsck", "--strict"],
        cwd=algorithm.experiment.snapshots.root,
        capture_output=True,
        text=True,
    )
    assert fsck.returncode == 0 and "error" not in fsck.stderr, fsck.stderr
    return _outcome(algorithm)


@needs_postgres
@pytest.mark.slow
def test_three_experiments_of_four_candidates_at_once_on_postgres(
    tmp_path, monkeypatch, tmp_path_factory, worker_id
):
    root, home = tmp_path, tmp_path / ".flashrsi"
    (home / ".dagster").mkdir(parents=True)
    (home / ".dagster" / "dagster.yaml").write_text(TELEMETRY_OFF + SETTINGS + run_queue(LIMITS))
    with fresh_database() as url:
        monkeypatch.setenv("FLASHRSI_TEST_DAGSTER_PG", url)
        port, seen, stop = free_port(), {}, threading.Event()
        # the Runs page reads the instance: no code location to load beside the drivers'
        webserver = [str(Path(sys.executable).parent / "dagster-webserver"), "--empty-workspace"]
        with _process(
            [*webserver, "-h", "127.0.0.1", "-p", str(port)], root, "webserver.log"
        ) as server:
            ui = UI(f"http://127.0.0.1:{port}", root, "", "")
            _wait_for(ui.url, server, root / "webserver.log")
            watcher = threading.Thread(target=_watch, args=(ui, seen, stop), daemon=True)
            watcher.start()
            drivers = [
                subprocess.Popen(
                    [
                        FLASHRSI,
                        "run",
                        "--config",
                        str(EXAMPLE),
                        *OVERRIDES,
                        "--experiment.home",
                        str(home),
                        "--experiment.name",
                        name,
                    ],
                    cwd=root,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
                for name in NAMES
            ]
            outputs = [d.communicate(timeout=1200)[0] for d in drivers]
            stop.set()
            watcher.join()
        assert [d.returncode for d in drivers] == [0, 0, 0], "\n".join(outputs)
        instance = dg.DagsterInstance.from_config(str(home / ".dagster"))
        try:
            records = instance.get_run_records()
        finally:
            instance.dispose()

    runs = [r.dagster_run for r in records]
    assert {r.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}
    keys = [r.tags["dagster/run_key"] for r in runs]
    assert len(keys) == len(set(keys)) == 3 * (1 + 4 + 1)  # seed, 4 candidates, finalize: once
    spans = [(r.start_time, r.end_time) for r in records]
    assert _most_at_once(spans) <= 3
    for name in NAMES:
        mine = [
            (r.start_time, r.end_time)
            for r in records
            if r.dagster_run.tags["flashrsi/experiment"] == name
        ]
        assert _most_at_once(mine) <= 2

    candidates = {
        run_id: (tags, statuses)
        for run_id, (tags, statuses) in seen.items()
        if tags.get("flashrsi/round") == "1"
    }
    assert len(candidates) == 12
    assert any("QUEUED" in statuses for _, statuses in candidates.values())
    assert any("STARTED" in statuses for _, statuses in candidates.values())
    assert {tags["flashrsi/candidate"] for tags, _ in candidates.values()} == {
        "c0",
        "c1",
        "c2",
        "c3",
    }
    assert all(tags["flashrsi/endpoint.1"] == "offline" for tags, _ in candidates.values())

    reference = sequential(tmp_path_factory, worker_id)  # the three agree with each other too
    for name in NAMES:
        assert _check_experiment(home, name) == reference
