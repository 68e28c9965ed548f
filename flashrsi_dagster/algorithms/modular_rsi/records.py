"""ModularRSI records: what each branch step and each integration round did.

records/modular_rsi/
  schedule.json                     Schedule: the evolution set's batches, per epoch
  <module>/step-003.json            StepRecord of the module's branch step 3 (epoch x batch)
  <module>/step-003-rollouts.jsonl  the batch's rollouts on the branch's current version
  <module>/step-003-analysis.json   the Worker's analysis run (its answer holds the findings)
  <module>/step-003-analysis-malformed-1.json  an analysis answer that could not be read,
                                    asked again with its parse error (`answer_retries`)
  <module>/step-003-findings.json   FindingsRecord: the findings, merged and ranked
  <module>/step-003-worker.json     the Worker's edit run
  <module>/step-003-edit.json       EditRecord: the committed candidate and its changed files
  <module>/step-003-content.json    ContentVerdict: the contamination check of the candidate
  <module>/step-003-review.json     the review run (its answer holds the verdict; retried
                                    ones as `step-003-review-malformed-<n>.json`)
  <module>/step-003-execution.jsonl the execution gate's rollout
  <module>/step-003-repair-1-*.json the first gate repair's worker, edit, content and review
                                    records (`gate_repairs`)
  integration/step-000.json         StepRecord of an integration round (merge, then repairs)
  integration/step-000-*.{json,jsonl}  as above, with `check.jsonl` the full check
  baseline-check.jsonl              the seed on every evolution task, run by the promotion
                                    (when it promotes another version) to compare the two
  promotion.json                    Promotion: the version chosen, and why
  test.jsonl, test.json             the sealed test of the promoted version, run once
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.algorithms.modular_rsi.protocol import Finding
from flashrsi_dagster.decisions.adoption import Refusal
from flashrsi_dagster.records import Record
from flashrsi_dagster.records.sealed_test import TestResult as TestResult  # shared

StepStatus = Literal["accepted", "rejected", "no_change", "aborted"]
GateName = Literal["scope", "content", "compile", "review", "execution", "activation"]


class Schedule(Record):
    kind: Literal["modular_rsi_schedule"] = "modular_rsi_schedule"
    batches: list[list[str]] = Field(description="Task ids per step, epoch after epoch.")
    epochs: int
    batches_per_epoch: int


class Gate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: GateName
    passed: bool
    reason: str


class FindingsRecord(Record):
    kind: Literal["findings"] = "findings"
    findings: list[Finding]
    targets: list[str] = Field(description="The files chosen for the edit, best supported first.")
    batch_error: str | None = Field(
        None, description="The batch's rollout or scoring fault, shown to the Worker as evidence."
    )


class EditRecord(Record):
    kind: Literal["modular_rsi_edit"] = "modular_rsi_edit"
    status: Literal["committed", "noop", "refused", "worker_failed"]
    parent_id: str
    snapshot_id: str | None = None
    changed: list[str] = Field(default_factory=list, description="`<status> <path>` per file.")
    reason: str | None = None


class Check(BaseModel):
    """A version run on the whole evolution set (an integration's full check)."""

    model_config = ConfigDict(extra="forbid")

    snapshot_id: str
    score: float
    tasks: int
    runtime_errors: list[str] = Field(description="Task ids whose run broke (error, timeout).")
    failed: list[str] = Field(description="Task ids answered wrongly.")
    eval_set: str | None = Field(
        None, description="The evolution set's version (`train/e1`); None before versioning."
    )

    @property
    def passed(self) -> bool:
        return not self.runtime_errors


class StepRecord(Record):
    kind: Literal["modular_rsi_step"] = "modular_rsi_step"
    slot: str = Field(description="The module, or `integration`.")
    round: int
    phase: Literal["branch", "merge", "repair"]
    status: StepStatus
    parent_id: str = Field(description="The version the step started from.")
    current_id: str = Field(description="The version after it: the candidate if accepted.")
    candidate_id: str | None = None
    tasks: list[str] = Field(default_factory=list, description="The batch (branch steps).")
    eval_set: str | None = Field(
        None, description="Branch steps: the version of the evolution set the batch is from."
    )
    gates: list[Gate] = Field(default_factory=list)
    repaired: list[Gate] = Field(
        default_factory=list,
        description="The compile or review findings the Worker repaired, in order "
        "(`gate_repairs`); `gates` are the last candidate's verdicts.",
    )
    reason: str
    check: Check | None = Field(None, description="Integration: the accepted version's check.")
    more: bool = Field(False, description="Integration: whether another round is worth it.")
    produced_by: str | None = Field(
        None,
        description="The snapshot whose harness made the step's analysis and edit "
        "(`worker.harness: adopted`); None: the Worker role's own harness.",
    )

    edit_failed: bool = Field(
        False,
        description="The Worker's analysis or edit failed (its run, not a gate), or, run by "
        "an adopted harness, its edit changed nothing or was refused.",
    )

    @property
    def improver_failed(self) -> bool:
        """An adopted harness failed as the Worker: the step is rejected, not aborted, and
        that harness edits no more (the Worker role's own takes its turns)."""
        return self.status == "rejected" and self.produced_by is not None and self.edit_failed


class Promotion(Record):
    kind: Literal["modular_rsi_promotion"] = "modular_rsi_promotion"
    snapshot_id: str
    source: Literal["final_merge", "initial_merge", "first_passing_merge", "seed"] = Field(
        description="`first_passing_merge`: records before 2026-12-04, when the fallback "
        "took the first merge or repair that passed; now it is the initial merge (seed 001)."
    )
    reason: str
    branches: dict[str, str] = Field(description="Each module's final branch version.")
    refused: list[Refusal] = Field(
        default_factory=list,
        description="The version the integration left, when the host refused its adoption "
        "(`decisions.adoption`: it violates the declared trade-off rule against the seed).",
    )


class Layout:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def of(cls, records: Path) -> Layout:
        return cls(records / "modular_rsi")

    @property
    def schedule(self) -> Path:
        return self.folder / "schedule.json"

    def step(self, slot: str, k: int, part: str | None = None, suffix: str = ".json") -> Path:
        """`<slot>/step-<k>.json`, or a part of it (`rollouts`, `analysis`, …)."""
        name = f"step-{k:03d}" + (f"-{part}" if part else "")
        return self.folder / slot / f"{name}{suffix}"

    def malformed(self, slot: str, k: int) -> list[Path]:
        """The step's answers that could not be read and were asked again, in order."""
        return sorted((self.folder / slot).glob(f"step-{k:03d}-*-malformed-*.json"))

    def repairs(self, slot: str, k: int) -> list[Path]:
        """The records of the step's gate repairs (`step-<k>-repair-<n>-<part>`), in order."""
        return sorted((self.folder / slot).glob(f"step-{k:03d}-repair-*"))

    def rollouts(self, slot: str, k: int) -> Path:
        return self.step(slot, k, "rollouts", ".jsonl")

    def execution(self, slot: str, k: int) -> Path:
        return self.step(slot, k, "execution", ".jsonl")

    def check(self, k: int) -> Path:
        return self.step("integration", k, "check", ".jsonl")

    @property
    def baseline_check(self) -> Path:
        return self.folder / "baseline-check.jsonl"

    @property
    def promotion(self) -> Path:
        return self.folder / "promotion.json"

    @property
    def test_rollouts(self) -> Path:
        return self.folder / "test.jsonl"

    @property
    def test(self) -> Path:
        return self.folder / "test.json"
