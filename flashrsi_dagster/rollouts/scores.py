"""Scores: the primary metric per task and overall, beside cost, time and failure modes.

The table has one row per final rollout. Its summary divides by tasks x attempts — the fixed
denominator: a rollout lost to infrastructure counts 0, it is never dropped.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from flashrsi_dagster.records import Status, Trajectory

COLUMNS = [
    "task_id",
    "split",
    "snapshot_id",
    "attempt",
    "reruns",
    "status",
    "score",
    "turns",
    "tool_calls",
    "input_tokens",
    "output_tokens",
    "cost",
    "duration",
    "error_type",
]


def scores_frame(trajectories: Sequence[Trajectory]) -> pd.DataFrame:
    rows = [
        {
            "task_id": t.task_id,
            "split": t.split,
            "snapshot_id": t.snapshot_id,
            "attempt": t.attempt,
            "reruns": t.metadata.get("rerun", 0),
            "status": str(t.status),
            "score": 0.0 if t.score is None else float(t.score),
            "turns": t.usage.turns,
            "tool_calls": t.usage.tool_calls,
            "input_tokens": t.usage.input_tokens,
            "output_tokens": t.usage.output_tokens,
            "cost": t.usage.cost,
            "duration": t.duration,
            "error_type": t.error.type if t.error else None,
        }
        for t in trajectories
    ]
    return pd.DataFrame(rows, columns=COLUMNS).astype({"cost": "float64"})


def summary(frame: pd.DataFrame, n_tasks: int, attempts: int = 1) -> dict[str, Any]:
    denominator = n_tasks * attempts
    failures = frame[frame["status"] != str(Status.SUCCESS)]
    return {
        # fsum: exact, so the figure is the same in whatever order the rollouts finished
        "score": math.fsum(frame["score"]) / denominator if denominator else None,
        "tasks": n_tasks,
        "rollouts": len(frame),
        "missing": denominator - len(frame),
        "success": int((frame["status"] == str(Status.SUCCESS)).sum()),
        "failure_modes": failures.groupby(["status", failures["error_type"].fillna("-")])
        .size()
        .rename("count")
        .reset_index()
        .to_dict("records"),
        "tool_calls": int(frame["tool_calls"].sum()),
        "input_tokens": int(frame["input_tokens"].sum()),
        "output_tokens": int(frame["output_tokens"].sum()),
        "cost": None if frame["cost"].isna().all() else float(frame["cost"].sum()),
        "duration": float(frame["duration"].sum()),
        "infra_reruns": int(frame["reruns"].sum()),
    }


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    """The table as parquet, to be written through the experiment's record store."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()
