"""The failure map: non-success rollouts grouped by status and error type, with examples."""

from __future__ import annotations

import pandas as pd
import pytest

from flashrsi_dagster.records import ErrorInfo, Status, Trajectory
from flashrsi_dagster.rollouts.scores import scores_frame
from flashrsi_dagster.stats import failure_map, failure_map_markdown

COLUMNS = ["status", "error_type", "count", "share", "example_task_ids"]


def _rollouts(*rows: tuple[str, str, str | None]) -> pd.DataFrame:
    """A minimal scores table from (task_id, status, error_type) rows."""
    return pd.DataFrame(rows, columns=["task_id", "status", "error_type"])


def test_groups_failures_with_counts_shares_and_examples():
    frame = _rollouts(
        ("t1", "success", None),
        ("t2", "success", None),
        ("t3", "infra_error", "ConnectionError"),
        ("t4", "infra_error", "ConnectionError"),
        ("t5", "timeout", "TimeoutError"),
        ("t6", "success", None),
        ("t7", "success", None),
        ("t8", "failure", None),
    )

    table = failure_map(frame)

    assert list(table.columns) == COLUMNS
    assert table.to_dict("records") == [
        {
            "status": "infra_error",
            "error_type": "ConnectionError",
            "count": 2,
            "share": 0.25,
            "example_task_ids": "t3, t4",
        },
        {
            "status": "failure",
            "error_type": "-",
            "count": 1,
            "share": 0.125,
            "example_task_ids": "t8",
        },
        {
            "status": "timeout",
            "error_type": "TimeoutError",
            "count": 1,
            "share": 0.125,
            "example_task_ids": "t5",
        },
    ]


def test_success_rows_are_excluded_but_count_in_the_share():
    frame = _rollouts(("a", "success", None), ("b", "success", None), ("c", "error", "KeyError"))

    table = failure_map(frame)

    assert list(table["status"]) == ["error"]
    assert table["share"].item() == pytest.approx(1 / 3)


def test_the_same_status_splits_by_error_type_and_a_missing_type_reads_dash():
    frame = _rollouts(
        ("a", "error", "ValueError"), ("b", "error", None), ("c", "error", "ValueError")
    )

    table = failure_map(frame)

    assert list(zip(table["error_type"], table["count"], strict=True)) == [
        ("ValueError", 2),
        ("-", 1),
    ]


def test_examples_are_distinct_sorted_and_capped():
    frame = _rollouts(*[(task, "failure", None) for task in ["d", "b", "b", "a", "c", "e"]])

    assert failure_map(frame)["example_task_ids"].item() == "a, b, c"
    assert failure_map(frame, examples=1)["example_task_ids"].item() == "a"
    assert failure_map(frame, examples=0)["example_task_ids"].item() == ""
    with pytest.raises(ValueError):
        failure_map(frame, examples=-1)


def test_rows_go_by_count_then_status():
    frame = _rollouts(
        ("a", "timeout", None),
        ("b", "error", None),
        ("c", "failure", None),
        ("d", "failure", None),
    )

    assert list(failure_map(frame)["status"]) == ["failure", "error", "timeout"]


@pytest.mark.parametrize(
    "frame",
    [scores_frame([]), _rollouts(("a", "success", None), ("b", "success", None))],
    ids=["no rollouts", "all succeeded"],
)
def test_nothing_failed_gives_an_empty_map_with_the_columns(frame):
    table = failure_map(frame)

    assert table.empty
    assert list(table.columns) == COLUMNS


def test_failure_map_of_a_scores_table_built_from_trajectories():
    def rollout(task_id: str, status: Status, error: str | None = None) -> Trajectory:
        info = ErrorInfo(type=error, message="boom") if error else None
        return Trajectory(task_id=task_id, snapshot_id="a" * 40, status=status, error=info)

    frame = scores_frame(
        [
            rollout("t1", Status.SUCCESS),
            rollout("t2", Status.FAILURE),
            rollout("t3", Status.ERROR, "ValueError"),
            rollout("t4", Status.ERROR, "ValueError"),
        ]
    )

    table = failure_map(frame)

    assert table[["status", "error_type", "count", "share"]].to_dict("records") == [
        {"status": "error", "error_type": "ValueError", "count": 2, "share": 0.5},
        {"status": "failure", "error_type": "-", "count": 1, "share": 0.25},
    ]


def test_markdown_lists_each_failure_mode():
    frame = _rollouts(("a", "success", None), ("b", "error", "Bad|Pipe"), ("c", "failure", None))

    text = failure_map_markdown(frame)

    assert text.splitlines() == [
        "| status | error type | count | share | example tasks |",
        "| --- | --- | --- | --- | --- |",
        r"| error | Bad\|Pipe | 1 | 33.3% | b |",
        "| failure | - | 1 | 33.3% | c |",
    ]


def test_markdown_says_so_when_nothing_failed():
    assert failure_map_markdown(_rollouts(("a", "success", None))) == "No failures in 1 rollouts.\n"
