"""The Worker's history folder is a view kept up to date from the records, and is always
what the records say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.algorithms.meta_harness.history import HistoryView
from flashrsi_dagster.algorithms.meta_harness.records import (
    EditRecord,
    Layout,
    RoundRecord,
    TestResult,
)
from flashrsi_dagster.records import RecordStore, Redactor, Status, Trajectory
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.snapshots import SnapshotStore


class Experiment:
    """Records of evaluated rounds, as the engine writes them."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.store = SnapshotStore(tmp / "store", secret_filter=Redactor(environ={}))
        self.layout = Layout(tmp / "records")
        self.records = RecordStore(tmp, Redactor(environ={}))
        self.seed = self.store.create_seed(HARNESS)
        self.rounds: list[RoundRecord] = []

    def add_round(self, answer: str = "benign") -> RoundRecord:
        k = len(self.rounds)
        snapshot = self.seed
        if k:
            work = self.store.check_out(self.seed, self.tmp / f"work-{k}")
            (work / "prompts" / "system.md").write_text(f"prompt of round {k}\n")
            snapshot = self.store.commit_child(self.seed, work, message=f"step {k}").snapshot
        self.write_rollouts(k, snapshot.id, answer)
        record = RoundRecord(
            round=k, status="evaluated", snapshot_id=snapshot.id, dev_score=0.5, dev_tasks=3
        )
        self.records.write(self.layout.round(k), record)
        self.rounds.append(record)
        return record

    def write_rollouts(self, k: int, snapshot_id: str, answer: str) -> None:
        record = RolloutRecord(self.layout.rollouts(k), self.records)
        for i in range(3):
            record.append(
                Trajectory(
                    task_id=f"t{i}",
                    split="dev",
                    snapshot_id=snapshot_id,
                    status=Status.FAILURE,
                    score=0.0,
                    answer=answer,
                )
            )


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def fresh(exp: Experiment, tmp: Path) -> dict[str, bytes]:
    """The history built from nothing, in a view of its own."""
    view = HistoryView(tmp / "fresh-view", exp.store, exp.layout)
    built = tree(view.update(exp.rounds))
    view.discard()
    return built


@pytest.fixture
def exp(tmp_path) -> Experiment:
    return Experiment(tmp_path)


def test_each_step_sees_exactly_the_history_a_fresh_build_gives(exp, tmp_path):
    view = HistoryView(tmp_path / "view", exp.store, exp.layout)
    for step in range(1, 5):
        exp.add_round()
        seen = tree(view.update(exp.rounds))
        assert seen == fresh(exp, tmp_path)
        index = json.loads(seen["index.json"])
        assert len(index) == step and all(
            v["folder"].startswith(".history/") for v in index.values()
        )
        assert f"trajectories/round-{step - 1:03d}/dev/t2.attempt-0.json" in seen
    assert (tmp_path / "view" / "tree").is_dir(), "kept between steps"


def test_an_update_writes_only_what_the_records_added(exp, tmp_path):
    view = HistoryView(tmp_path / "view", exp.store, exp.layout)
    exp.add_round()
    first = view.update(exp.rounds) / "trajectories" / "round-000" / "round.json"
    before = first.stat().st_ino, first.stat().st_mtime_ns
    exp.add_round()
    view.update(exp.rounds)
    assert (first.stat().st_ino, first.stat().st_mtime_ns) == before


def test_a_re_evaluated_round_is_copied_again(exp, tmp_path):
    view = HistoryView(tmp_path / "view", exp.store, exp.layout)
    exp.add_round()
    exp.add_round()
    view.update(exp.rounds)
    exp.records.remove(exp.layout.rollouts(1))  # a rematerialization replaces its rollouts
    exp.write_rollouts(1, exp.rounds[1].snapshot_id, answer="malicious")
    seen = tree(view.update(exp.rounds))
    assert seen == fresh(exp, tmp_path)
    assert b'"malicious"' in seen["trajectories/round-001/dev/t0.attempt-0.json"]


def test_a_view_of_another_experiment_is_not_used(exp, tmp_path):
    exp.add_round()
    HistoryView(tmp_path / "view", exp.store, exp.layout).update(exp.rounds)
    other = Experiment(tmp_path / "other")
    other.add_round(answer="malicious")
    view = HistoryView(tmp_path / "view", other.store, other.layout)
    assert tree(view.update(other.rounds)) == fresh(other, tmp_path)


def test_each_candidate_slot_reads_a_view_of_its_own_listing_every_candidate(exp):
    exp.add_round()
    exp.add_round()
    other = RoundRecord(round=1, slot="c1", status="rejected", reason="identical to the parent")
    exp.records.write(exp.layout.round(1, "c1"), other)
    c0, c1 = (HistoryView.for_experiment(exp.store, exp.layout, slot) for slot in ("c0", "c1"))
    try:
        assert c0.root != c1.root
        seen = tree(c1.update([*exp.rounds, other]))
        assert {"trajectories/round-001/round.json", "trajectories/round-001-c1/round.json"} <= set(
            seen
        )
        c0.update(exp.rounds)
        c0.discard()  # slot c0's Worker failed: slot c1's Worker may still be reading its own
        assert tree(c1.tree) == seen
    finally:
        c1.discard()


def test_each_candidate_has_a_summary_with_the_workers_hypothesis_and_axis(exp, tmp_path):
    exp.add_round()
    first = exp.add_round()
    report = (
        "Added a rule.\nHypothesis: naming the failing words fixes them\n"
        "Axis of change: prompt (rules)"
    )
    worker = Trajectory(task_id="worker-1", snapshot_id=exp.seed.id, status=Status.SUCCESS)
    exp.records.write(exp.layout.worker(1), worker.model_copy(update={"answer": report}))
    edit = EditRecord(
        round=1, status="committed", parent_id=exp.seed.id, changed=["M prompts/system.md"]
    )
    exp.records.write(exp.layout.edit(1), edit)
    exp.rounds[1] = first.model_copy(update={"dev_input_tokens": 600, "dev_output_tokens": 30})
    seen = tree(HistoryView(tmp_path / "view", exp.store, exp.layout).update(exp.rounds))
    summary = json.loads(seen["trajectories/round-001/summary.json"])
    assert summary["hypothesis"] == "naming the failing words fixes them"
    assert summary["axis"] == "prompt (rules)" and summary["report"] == report
    assert summary["changed"] == ["M prompts/system.md"] and summary["dev_score"] == 0.5
    assert json.loads(seen["trajectories/round-000/summary.json"])["hypothesis"] is None
    index = json.loads(seen["index.json"])
    assert index[first.snapshot_id]["tokens"] == {
        "input": 600,
        "output": 30,
        "context_per_task": 200.0,
    }
    assert index[exp.seed.id]["tokens"] is None  # not recorded: said so, not guessed
    frontier = json.loads(seen["frontier.json"])
    assert [(p["round"], p["context_tokens_per_task"]) for p in frontier] == [(1, 200.0)]


def test_nothing_of_the_sealed_test_reaches_the_history(exp, tmp_path):
    exp.add_round()
    exp.add_round()
    sealed = RolloutRecord(exp.layout.test_rollouts, exp.records)
    sealed.append(
        Trajectory(
            task_id="sealed-task-7",
            split="test",
            snapshot_id=exp.rounds[1].snapshot_id,
            status=Status.SUCCESS,
            score=1.0,
            answer="SEALED-ANSWER",
        )
    )
    result = TestResult(snapshot_id=exp.rounds[1].snapshot_id, test_score=0.987654, test_tasks=1)
    exp.records.write(exp.layout.test, result)
    seen = tree(HistoryView(tmp_path / "view", exp.store, exp.layout).update(exp.rounds))
    assert {"index.json", "frontier.json"} <= set(seen)
    for name, data in seen.items():
        for secret in (b"SEALED-ANSWER", b"sealed-task-7", b"0.987654", b'"test"'):
            assert secret not in data, (name, secret)
