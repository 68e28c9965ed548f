"""`flashrsi rollback`, in-process: a known baseline restored for later runs, recorded as a
roll-back (not a rejection), every record kept, the chain intact, resume unchanged."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.remote_origin import RegisteredCodeLocationOrigin, RemoteRepositoryOrigin

from flashrsi_dagster.cli import main
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.decisions.report import ledger_figures
from flashrsi_dagster.deployment.instance import persistent_instance
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.orchestration.owner import HEARTBEAT_TAG, PROCESS_TAG, identity
from flashrsi_dagster.records.chain import CHAIN, HEAD
from flashrsi_dagster.records.verify import problems_of
from tests.conftest import PATIENCE
from tests.decisions.test_ledger import copy_experiment, finished_demo

NAME = "meta-harness-demo"


@pytest.fixture(scope="module")
def finished(tmp_path_factory, worker_id) -> Path:
    return finished_demo(tmp_path_factory, worker_id)


@pytest.fixture
def home(finished, tmp_path) -> Path:
    return copy_experiment(finished, tmp_path / "home")


def digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and "snapshots" not in p.parts
    }


def rollback(home: Path, *args: str) -> int:
    return main(["rollback", "--experiment", NAME, "--experiment.home", str(home), *args])


def test_a_roll_back_restores_the_seed_for_later_runs_and_keeps_every_record(home, capsys):
    root = home / NAME
    ledger = Ledger(root)
    promoted, seed = ledger.baseline(), ledger.baseline().baseline.snapshot_id
    before = digests(root)

    code = rollback(home, "--to", seed[:10], "--reason", "round 1 regressed on new tasks")

    out = capsys.readouterr().out
    assert code == 0 and f"baseline rolled back to {seed[:12]}" in out
    entry = ledger.entries()[-1]
    assert entry.decision == "rollback" and entry.id == "rollback/1"
    assert entry.candidate.snapshot_id == seed
    assert entry.baseline.snapshot_id == promoted.candidate.snapshot_id
    assert entry.reason == "round 1 regressed on new tasks"
    assert entry.evidence.entries == ["seed", promoted.id]
    assert ledger.baseline() == entry
    assert [e.decision for e in ledger.entries()] == ["reject", "adopt", "rollback"]
    # the summary no longer shows the comparison that made the replaced baseline
    figures = ledger_figures(ledger, "rule")
    assert "rollback/1" in figures["baseline"] and "comparison_verdict" not in figures
    after = digests(root)
    changed = {p for p in before if before[p] != after.get(p)}
    assert changed == {"records/ledger.jsonl", CHAIN, HEAD}  # appended to, nothing rewritten
    assert after["records/ledger.jsonl"] != before["records/ledger.jsonl"]
    assert problems_of(root) == []

    # Back to the promoted snapshot: it was the experiment's baseline, so it is known.
    assert rollback(home, "--to", promoted.candidate.snapshot_id) == 0
    assert ledger.baseline().id == "rollback/2"
    assert ledger.baseline().reason == "rolled back by hand (no reason given)"


def test_resume_after_a_roll_back_redoes_nothing_and_names_the_baseline(home, capsys):
    root = home / NAME
    seed = Ledger(root).baseline().baseline.snapshot_id
    assert rollback(home, "--to", seed) == 0
    before = digests(root)
    capsys.readouterr()

    code = main(["resume", "--experiment", NAME, "--experiment.home", str(home)])

    out = capsys.readouterr().out
    assert code == 0
    assert f"baseline for later runs: {seed[:12]} (rollback, rollback/1)" in out
    assert "1 adopted, 1 rejected, 1 roll-back(s)" in out
    records = {p: d for p, d in digests(root).items() if p.startswith("records/")}
    assert records == {p: d for p, d in before.items() if p.startswith("records/")}
    assert problems_of(root) == []


def test_eval_of_the_baseline_runs_the_rolled_back_snapshot(home, capsys):
    seed = Ledger(home / NAME).baseline().baseline.snapshot_id
    assert rollback(home, "--to", seed) == 0
    config = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"

    code = main(
        [
            *("eval", "--config", str(config), "--split", "dev", "--snapshot", "baseline"),
            *("--experiment.home", str(home), "--benchmark.limit", "6", "--tasks"),
            _first_dev_task(home),
        ]
    )

    assert code == 0 and f"dev split, snapshot {seed[:12]}" in capsys.readouterr().out


def _first_dev_task(home: Path) -> str:
    from flashrsi_dagster.rollouts.record import RolloutRecord

    path = home / NAME / "records" / "meta_harness" / "round-000-dev.jsonl"
    return RolloutRecord(path, None).load()[0].task_id  # type: ignore[arg-type]


def test_unknown_experiments_and_snapshots_and_non_baselines_are_refused(home, capsys):
    ledger = Ledger(home / NAME)
    rejected = ledger.entries()[0].candidate.snapshot_id
    promoted = ledger.baseline().candidate.snapshot_id
    before = ledger.path.read_bytes()

    cases = [
        (["--experiment", "no-such", "--to", promoted], "no experiment 'no-such'"),
        (["--experiment", NAME, "--to", "deadbeef00"], "no snapshot with id 'deadbeef00'"),
        (["--experiment", NAME, "--to", rejected], "never the experiment's baseline"),
        (["--experiment", NAME, "--to", promoted], "is the baseline already"),
    ]
    for args, message in cases:
        code = main(["rollback", "--experiment.home", str(home), *args])
        assert code == 2 and message in capsys.readouterr().err

    assert ledger.path.read_bytes() == before
    assert problems_of(home / NAME) == []


# -- the runs in flight: cancelled, waited for, verified, then restored -------------------------


@pytest.fixture
def instance(home, monkeypatch):
    """The home's own Dagster instance, as `flashrsi run` makes it (DAGSTER_HOME restored)."""
    monkeypatch.setenv("DAGSTER_HOME", str(home / ".dagster"))
    made = persistent_instance(home)
    yield made
    made.dispose()


def _run(instance: dg.DagsterInstance, status, experiment: str = NAME, **tags: str) -> str:
    location = RegisteredCodeLocationOrigin("flashrsi")  # a queued run names its code
    origin = RemoteRepositoryOrigin(location, "__repository__").get_job_origin("meta_harness")
    run = dg.DagsterRun(
        job_name="meta_harness",
        status=status,
        tags={EXPERIMENT_TAG: experiment, **tags},
        remote_job_origin=origin,
    )
    return instance.add_run(run).run_id


STEP = """
import signal, time
# a step's process stops on SIGTERM whatever this test process was left with by the tests
# before it in one pytest worker (an ignored disposition and a blocked mask are inherited)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
print("ready", flush=True)
time.sleep(600)
"""


def test_a_roll_back_cancels_the_runs_in_flight_and_waits_for_them_before_restoring(
    home, instance, capsys
):
    seed = Ledger(home / NAME).baseline().baseline.snapshot_id
    step = subprocess.Popen([sys.executable, "-c", STEP], stdout=subprocess.PIPE, text=True)
    assert step.stdout is not None and step.stdout.readline() == "ready\n"
    ended: list[int] = []  # reaped as its parent would, or its pid would look alive
    reaper = threading.Thread(target=lambda: ended.append(step.wait()), daemon=True)
    reaper.start()
    try:
        queued = _run(instance, dg.DagsterRunStatus.QUEUED)
        started = _run(instance, dg.DagsterRunStatus.STARTED, **{PROCESS_TAG: identity(step.pid)})
        other = _run(instance, dg.DagsterRunStatus.QUEUED, experiment="another")

        # waits as long as a loaded machine may take to end them (the default, 120 s, is a
        # person's; in a busy test run the stopped process's end was seen later than that)
        wait = str(int(PATIENCE))
        code = rollback(home, "--to", seed, "--reason", "regressed", "--wait", wait)

        assert code == 0, capsys.readouterr().err
        reaper.join(timeout=60)
        assert ended == [-signal.SIGTERM]  # its process got the stop signal
    finally:
        step.kill()
        step.stdout.close()
    status = {r.run_id: r.status for r in instance.get_runs()}
    assert status[queued] == dg.DagsterRunStatus.CANCELED
    assert status[started] == dg.DagsterRunStatus.FAILURE  # its process ended mid-run
    assert status[other] == dg.DagsterRunStatus.QUEUED  # another experiment's: left alone
    entry = Ledger(home / NAME).entries()[-1]
    assert entry.decision == "rollback" and entry.candidate.snapshot_id == seed
    assert sorted(entry.evidence.runs) == sorted(
        [
            f"{queued}: queued: cancelled before it started",
            f"{started}: stop signal sent to its process (pid {step.pid})",
        ]
    )
    assert entry.evidence.verified[0] == "records: integrity chain intact"
    assert "snapshots: the 3 the ledger names are in the store" in entry.evidence.verified[1]
    assert f"cancelled run {queued}: queued" in capsys.readouterr().out
    assert problems_of(home / NAME) == []


def test_a_run_still_in_flight_after_the_wait_refuses_the_roll_back(home, instance, capsys):
    ledger = Ledger(home / NAME)
    seed, before = ledger.baseline().baseline.snapshot_id, ledger.path.read_bytes()
    # a run of another host that still beats: nothing here can stop it, it is waited for
    beats = {PROCESS_TAG: "another-host.0:4242:1", HEARTBEAT_TAG: f"{time.time() + 3600:.0f}"}
    elsewhere = _run(instance, dg.DagsterRunStatus.STARTED, **beats)

    code = rollback(home, "--to", seed, "--wait", "0")

    err = capsys.readouterr().err
    assert code == 2 and "roll-back refused: 1 run(s) still in flight" in err
    assert elsewhere in err and "nothing was restored" in err
    assert ledger.path.read_bytes() == before and ledger.baseline().decision == "adopt"
    assert rollback(home, "--to", seed, "--wait", "-1") == 2
    assert "--wait: expected seconds >= 0" in capsys.readouterr().err


def test_a_snapshot_the_ledger_names_missing_from_the_store_refuses_the_roll_back(home, capsys):
    ledger = Ledger(home / NAME)
    rejected = ledger.entries()[0].candidate.snapshot_id
    seed, before = ledger.baseline().baseline.snapshot_id, ledger.path.read_bytes()
    store = home / NAME / "snapshots"
    subprocess.run(
        ["git", "--git-dir", str(store), "update-ref", "-d", f"refs/snapshots/{rejected}"],
        check=True,
    )

    code = rollback(home, "--to", seed)

    err = capsys.readouterr().err
    assert code == 2 and "missing from" in err and rejected[:12] in err
    assert ledger.path.read_bytes() == before
