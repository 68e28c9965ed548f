"""Random search's records, written atomically and redacted.

records/random_search/
  round-000.json        RoundRecord of the seed's dev evaluation
  round-000-dev.jsonl   its rollouts (the engine's append-only record)
  round-001-content.json  the contamination verdict of round 1's candidate
  round-001.json        RoundRecord of round 1: the drawn edit, evaluated or rejected
  round-001-dev.jsonl   …
  promotion.json        Promotion
  test.jsonl, test.json the sealed test evaluation of the promoted snapshot
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from flashrsi_dagster.algorithms.base import ONLY_SLOT
from flashrsi_dagster.records import Record
from flashrsi_dagster.records.sealed_test import TestResult as TestResult  # shared


class RoundRecord(Record):
    kind: Literal["random_search_round"] = "random_search_round"
    round: int
    slot: str = ONLY_SLOT
    edit: int | None = Field(None, description="The drawn edit's index; None for the seed.")
    status: Literal["evaluated", "rejected"]
    snapshot_id: str | None = None
    parent_id: str | None = None
    dev_score: float | None = None
    dev_tasks: int = 0
    reason: str | None = None
    eval_set: str | None = None


class Promotion(Record):
    kind: Literal["random_search_promotion"] = "random_search_promotion"
    snapshot_id: str
    round: int
    slot: str = ONLY_SLOT
    dev_score: float
    ranking: list[tuple[int, str, float]] = Field(
        description="(round, snapshot id, dev score), best first; ties keep the earlier round."
    )


class Layout:
    def __init__(self, records: Path) -> None:
        self.folder = records / "random_search"

    def round(self, k: int) -> Path:
        return self.folder / f"round-{k:03d}.json"

    def rollouts(self, k: int) -> Path:
        return self.folder / f"round-{k:03d}-dev.jsonl"

    def content(self, k: int) -> Path:
        return self.folder / f"round-{k:03d}-content.json"

    @property
    def promotion(self) -> Path:
        return self.folder / "promotion.json"

    @property
    def test_rollouts(self) -> Path:
        return self.folder / "test.jsonl"

    @property
    def test(self) -> Path:
        return self.folder / "test.json"
