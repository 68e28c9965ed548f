"""The failure map: the ways rollouts failed, how often, and on which tasks."""

from __future__ import annotations

import pandas as pd

from flashrsi_dagster.records import Status
from flashrsi_dagster.stats.paired import markdown_table

COLUMNS = ["status", "error_type", "count", "share", "example_task_ids"]
NO_ERROR_TYPE = "-"


def failure_map(frame: pd.DataFrame, *, examples: int = 3) -> pd.DataFrame:
    """The non-success rollouts of a scores table, grouped by status and error type.

    `share` divides by every rollout in the table, successes included, so the shares of all
    failure modes sum to the table's failure rate. `example_task_ids` holds up to `examples`
    distinct task ids, sorted and comma-joined. Rows go by count, most frequent first.
    """
    if examples < 0:
        raise ValueError(f"examples must be >= 0, got {examples}")
    failures = frame[frame["status"] != str(Status.SUCCESS)] if len(frame) else frame
    if failures.empty:
        return _empty()
    error_type = failures["error_type"].fillna(NO_ERROR_TYPE).rename("error_type")
    groups = failures.groupby([failures["status"], error_type], dropna=False)["task_id"]
    table = groups.agg(
        count="size", example_task_ids=lambda ids: _examples(ids, examples)
    ).reset_index()
    table["share"] = table["count"] / len(frame)
    order = table.sort_values(
        ["count", "status", "error_type"], ascending=[False, True, True], ignore_index=True
    )
    return order[COLUMNS]


def failure_map_markdown(frame: pd.DataFrame, *, examples: int = 3) -> str:
    """The failure map of a scores table as a markdown table, or one line when nothing failed."""
    table = failure_map(frame, examples=examples)
    if table.empty:
        return f"No failures in {len(frame)} rollouts.\n"
    rows = zip(
        table["status"],
        table["error_type"],
        table["count"],
        (f"{share:.1%}" for share in table["share"]),
        table["example_task_ids"],
        strict=True,
    )
    return markdown_table(["status", "error type", "count", "share", "example tasks"], rows)


def _examples(task_ids: pd.Series, limit: int) -> str:
    return ", ".join(sorted({str(t) for t in task_ids})[:limit])


def _empty() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "status": pd.Series(dtype="str"),
            "error_type": pd.Series(dtype="str"),
            "count": pd.Series(dtype="int64"),
            "share": pd.Series(dtype="float64"),
            "example_task_ids": pd.Series(dtype="str"),
        }
    )
