"""What is read back from a rollout record does not depend on the order the rollouts finished
in: concurrent rollouts land in any order, and a run killed and resumed appends the rest later.
Two records holding the same results give the same list and the same score to the last bit, so
a tie between two candidates stays a tie, broken by the algorithm's stated rule."""

from __future__ import annotations

from pathlib import Path

from flashrsi_dagster.config.comparison import ComparisonConfig
from flashrsi_dagster.decisions.compare import metrics
from flashrsi_dagster.records import RecordStore, Redactor, Status, Trajectory
from flashrsi_dagster.rollouts.engine import final_trajectories
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.rollouts.scores import scores_frame, summary

SCORES = {"t1": 0.1, "t2": 0.2, "t3": 0.3}
"""Partial credit whose float sum depends on its order: (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3)."""


def _run(task: str, attempt: int, status: Status = Status.SUCCESS) -> Trajectory:
    score = 0.0 if status == Status.INFRA_ERROR else SCORES[task]
    rerun = 0 if status == Status.INFRA_ERROR else 1
    return Trajectory(
        task_id=task,
        split="dev",
        snapshot_id="s",
        attempt=attempt,
        status=status,
        score=score,
        metadata={"rerun": rerun},
    )


def _recorded(folder: Path, runs: list[Trajectory]) -> list[Trajectory]:
    record = RolloutRecord(folder / "rollouts.jsonl", RecordStore(folder, Redactor()))
    for run in runs:
        record.append(run)
    return final_trajectories(record, reruns=1)


def test_a_record_reads_back_the_same_whatever_order_its_rollouts_finished_in(tmp_path):
    keys = [(t, a) for t in SCORES for a in (0, 1)]
    in_order = [_run(t, a) for t, a in keys]
    # finished the other way round, the first of them after an infrastructure failure rerun
    # (a resumed run appends what a kill cut off after what had finished)
    late = [_run("t3", 1, Status.INFRA_ERROR), *(_run(t, a) for t, a in reversed(keys))]

    first = _recorded(tmp_path / "a", in_order)
    second = _recorded(tmp_path / "b", late)

    assert [(t.task_id, t.attempt) for t in first] == sorted(keys)
    assert [(t.task_id, t.attempt) for t in second] == sorted(keys)
    assert [t.status for t in second] == [Status.SUCCESS] * len(keys)


def test_a_score_is_the_same_to_the_last_bit_in_any_order_of_the_rollouts():
    runs = [_run(t, 0) for t in SCORES]
    orders = [runs, runs[::-1], [runs[1], runs[2], runs[0]]]

    scores = {summary(scores_frame(order), len(SCORES))["score"] for order in orders}
    compared = {metrics(order).score for order in orders}

    assert len(scores) == 1 and len(compared) == 1
    assert scores == compared
    assert ComparisonConfig().primary == "score"  # the figure adoption is vetted on
