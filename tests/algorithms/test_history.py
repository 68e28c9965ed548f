"""The Worker's history folder is lent from a cache, and is always what the records say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.algorithms.meta_harness.history import HISTORY, HistoryCache
from flashrsi_dagster.algorithms.meta_harness.records import Layout, RoundRecord
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
    """The history built from nothing, with a cache of its own."""
    cache = HistoryCache(tmp / "fresh-cache", exp.store, exp.layout)
    edit = tmp / "fresh-edit"
    edit.mkdir()
    with cache.lend(edit, exp.rounds) as history:
        built = tree(history)
    cache.discard()
    edit.rmdir()
    return built


@pytest.fixture
def exp(tmp_path) -> Experiment:
    return Experiment(tmp_path)


def lend(cache: HistoryCache, exp: Experiment, edit: Path, change=None) -> dict[str, bytes]:
    edit.mkdir(exist_ok=True)
    with cache.lend(edit, exp.rounds) as history:
        seen = tree(history)
        if change:
            change(history)
    assert not (edit / HISTORY).exists(), "the history is gone before the commit"
    return seen


def test_each_step_sees_exactly_the_history_a_fresh_build_gives(exp, tmp_path):
    cache = HistoryCache(tmp_path / "cache", exp.store, exp.layout)
    for step in range(1, 5):
        exp.add_round()
        seen = lend(cache, exp, tmp_path / f"edit-{step}")
        assert seen == fresh(exp, tmp_path)
        index = json.loads(seen["index.json"])
        assert len(index) == step and all(
            v["folder"].startswith(".history/") for v in index.values()
        )
        assert f"trajectories/round-{step - 1:03d}/dev/t2.attempt-0.json" in seen
    assert (tmp_path / "cache" / "tree").is_dir(), "kept between steps"


def test_a_worker_that_edits_its_history_does_not_change_what_the_next_step_sees(exp, tmp_path):
    cache = HistoryCache(tmp_path / "cache", exp.store, exp.layout)
    exp.add_round()
    rollout = "trajectories/round-000/dev/t0.attempt-0.json"

    def tamper(history: Path) -> None:
        (history / rollout).write_text('{"score": 1.0}\n')
        (history / "notes.md").write_text("the Worker's own notes\n")

    lend(cache, exp, tmp_path / "edit-1", change=tamper)
    assert not (tmp_path / "cache" / "tree").exists(), "a changed history is dropped"
    exp.add_round()
    seen = lend(cache, exp, tmp_path / "edit-2")
    assert seen == fresh(exp, tmp_path)
    assert "notes.md" not in seen and b'"score": 1.0' not in seen[rollout]


@pytest.mark.parametrize(
    "change",
    [
        lambda h: __import__("shutil").rmtree(h),
        lambda h: (h / "index.json").chmod(0o755),
        lambda h: (h / "snapshots").rename(h / "moved"),
    ],
    ids=["deleted", "chmod", "renamed"],
)
def test_any_change_drops_the_cache(exp, tmp_path, change):
    cache = HistoryCache(tmp_path / "cache", exp.store, exp.layout)
    exp.add_round()
    lend(cache, exp, tmp_path / "edit-1", change=change)
    assert not (tmp_path / "cache" / "tree").exists()
    exp.add_round()
    assert lend(cache, exp, tmp_path / "edit-2") == fresh(exp, tmp_path)


def test_a_re_evaluated_round_is_copied_again(exp, tmp_path):
    cache = HistoryCache(tmp_path / "cache", exp.store, exp.layout)
    exp.add_round()
    exp.add_round()
    lend(cache, exp, tmp_path / "edit-1")
    exp.records.remove(exp.layout.rollouts(1))  # a rematerialization replaces its rollouts
    exp.write_rollouts(1, exp.rounds[1].snapshot_id, answer="malicious")
    seen = lend(cache, exp, tmp_path / "edit-2")
    assert seen == fresh(exp, tmp_path)
    assert b'"malicious"' in seen["trajectories/round-001/dev/t0.attempt-0.json"]


def test_a_cache_of_another_experiment_is_not_used(exp, tmp_path):
    exp.add_round()
    lend(HistoryCache(tmp_path / "cache", exp.store, exp.layout), exp, tmp_path / "edit-1")
    other = Experiment(tmp_path / "other")
    other.add_round(answer="malicious")
    cache = HistoryCache(tmp_path / "cache", other.store, other.layout)
    assert lend(cache, other, tmp_path / "edit-2") == fresh(other, tmp_path)
