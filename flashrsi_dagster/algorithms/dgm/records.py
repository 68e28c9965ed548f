"""DGM's records, written atomically and redacted. A candidate is a generation's slot;
the seed is generation 0, slot c0.

records/dgm/
  gen-000-c0.json               CandidateRecord of the seed (admitted, its train scores)
  gen-000-c0-editing.json       EditingVerdict: the editing check of the seed
  gen-000-c0-train-1.jsonl      its first-stage train rollouts (`-train-2.jsonl`: the rest)
  gen-003-c1-improver.json      the improver's trajectory (the parent's harness editing a
                                copy of itself, its own train logs mounted read-only)
  gen-003-c1-content.json       ContentVerdict: the contamination check of the child
  gen-003-c1-editing.json       EditingVerdict: the child's editing check
  gen-003-c1-train-1.jsonl      …
  gen-003-c1.json               CandidateRecord: parent, produced_by, entry, admitted or
                                refused and why, the score of each stage
  dev-gen-003-c1.json(l)        DevRecord and rollouts of an admitted member on dev
  promotion.json                Promotion: admitted members ranked by dev
  test-1.json(l), test-2.json…  the sealed test of the best by dev, then the next (test_top_k)
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from flashrsi_dagster.decisions.adoption import Refusal
from flashrsi_dagster.records import Record
from flashrsi_dagster.records.sealed_test import TestResult as TestResult  # shared

Status = Literal["admitted", "refused", "noop", "improver_failed"]


class CandidateRecord(Record):
    kind: Literal["dgm_candidate"] = "dgm_candidate"
    generation: int
    slot: str
    status: Status
    snapshot_id: str | None = None
    parent_id: str | None = Field(None, description="The archive member it was made from.")
    produced_by: str | None = Field(
        None,
        description="The snapshot whose harness made the edit: the parent itself (DGM), "
        "None for the seed and for the fixed meta-agent (`self_improvement: false`).",
    )
    entry: str | None = Field(
        None,
        description="What the attempt was asked to work on: a failed train task id "
        "of the parent, or a special entry (`improve_workflow`, `streamline_tools`).",
    )
    reasons: list[str] = Field(
        default_factory=list, description="Why it was refused (each check that failed)."
    )
    compiled: bool | None = None
    editing_passed: bool | None = None
    stage_scores: list[float] = Field(
        default_factory=list, description="The train score of each stage run, in order."
    )
    stage_tasks: list[int] = Field(default_factory=list)
    score: float | None = Field(
        None, description="Train score over every task evaluated (what selection reads)."
    )
    failed_tasks: list[str] = Field(
        default_factory=list, description="Train task ids it failed: the entries it offers."
    )
    eval_set: str | None = None

    @property
    def admitted(self) -> bool:
        return self.status == "admitted"


class DevRecord(Record):
    kind: Literal["dgm_dev"] = "dgm_dev"
    generation: int
    slot: str
    snapshot_id: str
    dev_score: float
    dev_tasks: int
    eval_set: str | None = None


class Promotion(Record):
    kind: Literal["dgm_promotion"] = "dgm_promotion"
    snapshot_id: str
    generation: int
    slot: str
    dev_score: float
    ranking: list[tuple[int, str, str, float]] = Field(
        description="(generation, slot, snapshot id, dev score), best first; ties keep the "
        "earlier admission."
    )
    refused: list[Refusal] = Field(
        default_factory=list,
        description="Members ranked above the promoted one whose adoption the host refused "
        "(`decisions.adoption`: they violate the declared trade-off rule against the seed on "
        "dev; only when the seed was evaluated on dev).",
    )


def stem(generation: int, slot: str) -> str:
    return f"gen-{generation:03d}-{slot}"


class Layout:
    def __init__(self, records: Path) -> None:
        self.folder = records / "dgm"

    def candidate(self, g: int, slot: str) -> Path:
        return self.folder / f"{stem(g, slot)}.json"

    def improver(self, g: int, slot: str) -> Path:
        return self.folder / f"{stem(g, slot)}-improver.json"

    def content(self, g: int, slot: str) -> Path:
        return self.folder / f"{stem(g, slot)}-content.json"

    def editing(self, g: int, slot: str) -> Path:
        return self.folder / f"{stem(g, slot)}-editing.json"

    def train(self, g: int, slot: str, stage: int) -> Path:
        return self.folder / f"{stem(g, slot)}-train-{stage}.jsonl"

    def dev(self, g: int, slot: str) -> Path:
        return self.folder / f"dev-{stem(g, slot)}.json"

    def dev_rollouts(self, g: int, slot: str) -> Path:
        return self.folder / f"dev-{stem(g, slot)}.jsonl"

    @property
    def promotion(self) -> Path:
        return self.folder / "promotion.json"

    def test(self, rank: int) -> Path:
        return self.folder / f"test-{rank}.json"

    def test_rollouts(self, rank: int) -> Path:
        return self.folder / f"test-{rank}.jsonl"
