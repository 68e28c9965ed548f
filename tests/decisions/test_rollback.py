"""`flashrsi rollback`, in-process: a known baseline restored for later runs, recorded as a
roll-back (not a rejection), every record kept, the chain intact, resume unchanged."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from flashrsi_dagster.cli import main
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.decisions.report import ledger_figures
from flashrsi_dagster.records.chain import CHAIN, HEAD
from flashrsi_dagster.records.verify import problems_of
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
