"""Best-of-N's records, written atomically and redacted.

records/best_of_n/
  budget.json               BudgetRecord: what the samples may spend, fixed with the seed
  round-000.json            SampleRecord of the seed's dev evaluation
  round-000-dev.jsonl       its rollouts (the engine's append-only record)
  round-000-train.jsonl     the seed's train rollouts, shown to every Worker (`shown: train`)
  round-001-worker.json     round 1, slot c0 (sample 0): the Worker's trajectory
  round-001-edit.json       EditRecord: committed / noop / refused / worker_failed, its spend
  round-001-content.json    the contamination verdict of its committed edit
  round-001.json            SampleRecord: evaluated or rejected
  round-001-dev.jsonl       …
  round-001-c1-….json       the same for slot c1 (`side_by_side` >= 2): sample 1
  promotion.json            Promotion
  test.jsonl, test.json     the sealed test of the promoted snapshot
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from flashrsi_dagster.algorithms.base import ONLY_SLOT
from flashrsi_dagster.controls.spend import Spend
from flashrsi_dagster.decisions.adoption import Refusal
from flashrsi_dagster.records import Record
from flashrsi_dagster.records.sealed_test import TestResult as TestResult  # shared


class BudgetRecord(Record):
    kind: Literal["best_of_n_budget"] = "best_of_n_budget"
    model_calls: int | None = Field(description="The cap on Worker model calls; None: none.")
    tokens: int | None = Field(description="The cap on Worker tokens; None: none.")
    samples: int = Field(description="N: samples at most.")
    matches: str | None = Field(None, description="The experiment whose budget this matches.")
    matched: dict[str, Spend] = Field(
        default_factory=dict,
        description="What the matched experiment spent, per role but the target, as read "
        "from its gateway log when the seed was evaluated.",
    )
    matched_search_over: bool | None = Field(
        None, description="Whether the matched experiment's search was over by then."
    )


class EditRecord(Record):
    kind: Literal["best_of_n_edit"] = "best_of_n_edit"
    round: int
    slot: str = ONLY_SLOT
    sample: int
    status: Literal["committed", "noop", "refused", "worker_failed"]
    snapshot_id: str | None = None
    parent_id: str
    reason: str | None = None
    changed: list[str] = Field(default_factory=list)
    changed_lines: int = Field(0, description="Lines inserted plus deleted against the seed.")
    spend: Spend = Field(default_factory=Spend, description="What the Worker's run spent.")


class SampleRecord(Record):
    kind: Literal["best_of_n_sample"] = "best_of_n_sample"
    round: int
    slot: str = ONLY_SLOT
    sample: int | None = Field(None, description="0-based sample index; None for the seed.")
    status: Literal["evaluated", "rejected"]
    snapshot_id: str | None = None
    parent_id: str | None = None
    dev_score: float | None = None
    dev_tasks: int = 0
    changed_lines: int = 0
    spend: Spend = Field(default_factory=Spend)
    reason: str | None = None
    eval_set: str | None = None


class Promotion(Record):
    kind: Literal["best_of_n_promotion"] = "best_of_n_promotion"
    snapshot_id: str
    round: int
    slot: str = ONLY_SLOT
    dev_score: float
    ranking: list[tuple[int, str, float]] = Field(
        description="(round, snapshot id, dev score), best first; ties keep fewer changed "
        "lines, then the earlier sample (the seed, with none, first)."
    )
    refused: list[Refusal] = Field(
        default_factory=list,
        description="Samples ranked above the promoted one whose adoption the host refused "
        "(`decisions.adoption`: they violate the declared trade-off rule against the seed).",
    )


def candidate_stem(k: int, slot: str = ONLY_SLOT) -> str:
    return f"round-{k:03d}" if slot == ONLY_SLOT else f"round-{k:03d}-{slot}"


class Layout:
    def __init__(self, records: Path) -> None:
        self.folder = records / "best_of_n"

    def round(self, k: int, slot: str = ONLY_SLOT) -> Path:
        return self.folder / f"{candidate_stem(k, slot)}.json"

    def rollouts(self, k: int, slot: str = ONLY_SLOT, split: str = "dev") -> Path:
        return self.folder / f"{candidate_stem(k, slot)}-{split}.jsonl"

    def worker(self, k: int, slot: str) -> Path:
        return self.folder / f"{candidate_stem(k, slot)}-worker.json"

    def edit(self, k: int, slot: str) -> Path:
        return self.folder / f"{candidate_stem(k, slot)}-edit.json"

    def content(self, k: int, slot: str) -> Path:
        return self.folder / f"{candidate_stem(k, slot)}-content.json"

    @property
    def budget(self) -> Path:
        return self.folder / "budget.json"

    @property
    def promotion(self) -> Path:
        return self.folder / "promotion.json"

    @property
    def test_rollouts(self) -> Path:
        return self.folder / "test.jsonl"

    @property
    def test(self) -> Path:
        return self.folder / "test.json"
