"""The sealed test's result, the same record for every algorithm: the promoted snapshot's one
evaluation on the test split (in Meta-Harness, also each other frontier member's, one each)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flashrsi_dagster.records.store import Record


class TestResult(Record):
    __test__ = False  # not a pytest test class, whatever its name

    kind: Literal["sealed_test"] = "sealed_test"
    snapshot_id: str
    test_score: float
    test_tasks: int
    eval_set: str | None = Field(None, description="The test set's version (`test/e1`).")
    tested_as: Literal["promoted", "frontier"] = Field(
        "promoted",
        description="Why this snapshot was tested: `promoted` (the search's choice), or "
        "`frontier` (Meta-Harness's `sealed_test_frontier`: another member of the dev x "
        "tokens frontier, tested after the promoted one; never a selection).",
    )
