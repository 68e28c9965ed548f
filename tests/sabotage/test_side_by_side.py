"""Attacks on the paths where a round's candidates run side by side (separate runs, one
experiment home, one run queue): an operator's re-evaluation racing the candidates in flight,
runs launched from the UI past the queue's limits, links planted in the shared home.

A process's step is stood for by a thread holding the same locks on files of its own opening:
`flock` locks belong to open files, so two openings in one process contend as two processes'
would."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.reconstruct import ReconstructableRepository
from dagster._core.remote_origin import RegisteredCodeLocationOrigin, RemoteRepositoryOrigin

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.meta_harness.records import RoundRecord
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.config import load_config
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.deployment.code_server import LOCATION
from flashrsi_dagster.deployment.in_process import CODE_LOCATION
from flashrsi_dagster.deployment.instance import persistent_instance
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.experiment.lock import LOCKS, StepLock
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.records import read_record
from flashrsi_dagster.records.atomic import PlantedFileError
from flashrsi_dagster.records.chain import CHAIN
from tests.conftest import PATIENCE
from tests.sabotage.helpers import EXAMPLE

NOT_STARTED = dg.DagsterRunStatus.NOT_STARTED


def _opened(home: Path) -> MetaHarness:
    overrides = ["--experiment.home", str(home), "--benchmark.limit", "3"]
    overrides += ["--algorithm.max_steps", "2", "--algorithm.candidates_per_round", "2"]
    return MetaHarness(open_experiment(load_config(EXAMPLE, overrides)), log=lambda _: None)


def test_re_evaluating_a_round_waits_for_the_next_rounds_candidates_in_flight(tmp_path):
    """Round 2's candidates read round 1's records (their Workers' history, the order check
    of each edit): a rematerialization of round 1 that moved them aside meanwhile would give
    round 2's candidates different histories, or refuse the one that starts late ("round 1
    has no result yet"). So it is a sequential step: it waits for every candidate in flight."""
    harness = _opened(tmp_path)
    while (step := harness.next()).round is not None and step.round <= 1:
        harness.do(step)
    harness.close()
    root, record = harness.experiment.paths.root, harness.layout.round(1, "c0")
    before = record.read_bytes()
    in_flight, release, done = threading.Event(), threading.Event(), threading.Event()

    def round_2_candidate() -> None:  # another process's candidate step, at work
        with StepLock.of(root).held(shared=True), StepLock(root / LOCKS / "r002.c0.lock").held():
            in_flight.set()
            release.wait(PATIENCE)  # until the test has looked

    threading.Thread(target=round_2_candidate, daemon=True).start()
    assert in_flight.wait(10)
    operator = _opened(tmp_path)  # the UI's rematerialization, in a run of its own
    redo = threading.Thread(
        target=lambda: (operator.evaluate_round(1, "c0", again=True), done.set()), daemon=True
    )
    redo.start()
    time.sleep(2)
    archived = sorted(p.name for p in harness.layout.folder.glob("*replaced-*"))
    assert not done.is_set() and archived == [] and record.read_bytes() == before
    release.set()
    redo.join(PATIENCE)
    assert done.is_set()
    archived = sorted(p.name for p in harness.layout.folder.glob("*replaced-*"))
    assert sorted(name.split(".replaced-")[0] for name in archived) == [
        "round-001",
        "round-001-dev",
    ]
    assert operator.read_state().round(1, "c0").status == "evaluated"
    operator.close()
    operator.experiment.records.verify()


def _launched_from_the_ui(
    instance: dg.DagsterInstance, job: str, tags: dict, run_config: dict | None = None
) -> dg.DagsterRun:
    """A run as the UI's launchpad or a backfill makes it: its partition's tags, and whatever
    tags and config the user typed; then submitted to the instance's run queue."""
    location = RegisteredCodeLocationOrigin(LOCATION)
    origin = RemoteRepositoryOrigin(location, "__repository__").get_job_origin(job)
    code = ReconstructableRepository.for_module(*CODE_LOCATION, working_directory=None)
    made = dg.DagsterRun(
        job_name=job,
        status=NOT_STARTED,
        tags=tags,
        run_config=run_config or {},
        remote_job_origin=origin,
        job_code_origin=code.get_reconstructable_job(job).get_python_origin(),
    )
    run = instance.add_run(made)
    instance.submit_run(run.run_id, workspace=None)  # type: ignore[arg-type]
    submitted = instance.get_run_by_id(run.run_id)
    assert submitted is not None and submitted.status == dg.DagsterRunStatus.QUEUED
    return submitted


def test_a_run_launched_from_the_ui_waits_under_its_experiments_and_endpoints_limits(
    tmp_path, home_storage
):
    """The driver tags its runs; the UI and backfills tag a run with its partition only, and a
    run without the experiment's and endpoints' tags passes every limit but the total (eight
    candidates of one experiment at once, on one endpoint whose provider allows four). The
    queue gives each run the tags its partition implies, and replaces a forged experiment."""
    overrides = ["--experiment.home", str(tmp_path), "--benchmark.limit", "3"]
    # a user and password in the URL, or a key in its query, are refused at validate (rounds
    # 14 and 15): what the query may still hold is kept out of the tags too
    overrides += ["--algorithm.worker.llm.base_url", "https://llm.example.com/v1?v=s3cret"]
    config = load_config(EXAMPLE, overrides)
    name = config.experiment.name
    open_experiment(config)  # created, as `flashrsi run` or the start job leaves it
    instance = persistent_instance(tmp_path)
    try:
        candidate = {
            "dagster/partition": f"r001.c0|{name}",
            "dagster/partition/candidate": "r001.c0",
            "dagster/partition/experiment": name,
        }
        forged = {**candidate, EXPERIMENT_TAG: "decoy"}
        finalize = {"dagster/partition": name}
        runs = [
            _launched_from_the_ui(instance, "meta_harness", candidate),
            _launched_from_the_ui(instance, "meta_harness", forged),
            _launched_from_the_ui(instance, "meta_harness_finalize", finalize),
        ]
        limited = {"flashrsi/endpoint.1": "https://llm.example.com:443"}
        limited |= {"flashrsi/endpoint.2": "offline", EXPERIMENT_TAG: name}
        for run in runs:
            assert limited.items() <= run.tags.items()
        # a start the queue lets through (one it refuses fails before it is queued)
        start = {"config_file": str(EXAMPLE), "name": "another", "overrides": []}
        start_config = {"ops": {"create_experiment": {"config": start}}}
        unpartitioned = _launched_from_the_ui(instance, "start_experiment", {}, start_config)
        assert EXPERIMENT_TAG not in unpartitioned.tags
        assert "s3cret" not in str([r.tags for r in instance.get_runs()])
    finally:
        instance.dispose()


def test_a_candidate_evaluated_again_twice_in_a_second_keeps_every_replaced_record(tmp_path):
    """Each evaluation again moves the candidate's records aside under the time's name; two
    in one second (an operator's double click, a fast model; here the record written back at
    once) must not rename the second onto the first: the replaced records are the evidence of
    what was evaluated."""
    harness = _opened(tmp_path)
    while (step := harness.next()).round is not None and step.round <= 1:
        harness.do(step)
    layout = harness.layout

    harness.restart_round(1, "c1")
    (first,) = layout.folder.glob("round-001-c1.replaced-*.json")
    harness.write(layout.round(1, "c1"), read_record(first, RoundRecord))  # within the second
    harness.restart_round(1, "c1")

    archived = sorted(p.name for p in layout.folder.glob("round-001-c1*.replaced-*"))
    assert len(archived) == 3  # the rollouts once, the round record twice
    harness.close()
    harness.experiment.records.verify()


def test_a_lock_planted_as_a_link_makes_the_framework_create_nothing_where_it_points(tmp_path):
    """The home is shared with run containers (whose agents may run unconfined) and other
    machines. A dangling link planted as a candidate's lock would have the framework, root,
    create the file it names anywhere on the host (`/etc/nologin`, say)."""
    harness = _opened(tmp_path / "home")
    harness.do(harness.next())  # the seed round
    planted, target = harness.experiment.paths.root / LOCKS / "r001.c0.lock", tmp_path / "made"
    planted.parent.mkdir(exist_ok=True)
    planted.symlink_to(target)

    with pytest.raises(PlantedFileError, match=r"r001\.c0\.lock is a symbolic link"):
        harness.do(Step("propose", 1, "c0"))

    assert not target.exists() and not harness.layout.edit(1, "c0").exists()
    harness.close()


def test_the_chain_head_swapped_for_a_link_mid_run_is_never_written_through(tmp_path):
    """The head is rewritten in place at every write; a process that has written before
    trusts the folder as it left it. Swapped for a link meanwhile, it would truncate and
    overwrite whatever the link names (`/etc/shadow`) with a sequence number and a hash."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n" * 100)
    harness = _opened(tmp_path / "home")
    harness.do(harness.next())  # the seed round: this process has written the chain
    records = harness.experiment.records
    head = harness.experiment.paths.root / "records" / "chain.head"
    head.unlink()
    head.symlink_to(victim)

    with pytest.raises(PlantedFileError, match=r"chain\.head is a symbolic link"):
        records.write_bytes(harness.layout.folder / "note.json", b"{}\n")

    assert victim.read_text() == "precious\n" * 100
    harness.close()


def test_a_candidate_run_done_again_after_its_success_writes_nothing(tmp_path):
    """A successful candidate's run re-executed from the UI, or launched again by a second
    driver, reads its candidate back: no rollout, no record, no ledger entry made twice."""
    harness = _opened(tmp_path)
    while (step := harness.next()).round is not None and step.round <= 1:
        harness.do(step)
    root = harness.experiment.paths.root
    chain, ledger = (root / CHAIN).read_bytes(), Ledger.of(harness.experiment).entries()

    again = _opened(tmp_path)  # the re-executed run, in a process of its own
    again.do(Step("propose", 1, "c1"))
    again.evaluate_round(1, "c0")
    again.evaluate_seed()

    assert (root / CHAIN).read_bytes() == chain
    assert Ledger.of(again.experiment).entries() == ledger
    again.close()
    harness.close()
