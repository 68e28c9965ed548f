"""STOP's records, written atomically and redacted.

records/stop/
  round-000.json              RoundRecord: the seed improver scored (train and dev)
  round-001-run.json          RunRecord: the round's improver applied to its own code
  round-001-content.json      ContentVerdict of the improver it returned
  round-001.json              RoundRecord: that improver scored, or rejected
  improvers/<digest>.json     ImproverScore: one improver program's downstream runs and its
                              train meta-utility (every program the search scored, returned
                              or only tried by an improver), with its attempts
  improvers/<digest>-content.json  its contamination verdict, made before it is scored
  solutions/<digest>-<set>.json    SolutionScore: one target solution scored on one task set
  solutions/<digest>-<set>.jsonl   its rollouts
  solutions/<digest>-content.json  the solution's contamination verdict
  promotion.json              Promotion
  test.json                   StopTest: the promoted improver's outputs on the sealed test
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.algorithms.base import ONLY_SLOT
from flashrsi_dagster.records import Record

ATTEMPT_KINDS = (
    "sandbox_switch",
    "budget_exceeded",
    "model_cap",
    "utility_tamper",
    "network_escape",
    "process_escape",
    "host_file_read",
)


class Attempt(BaseModel):
    """One attempt to get round the jail, the caps or the utility, refused and flagged."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(description=f"One of {', '.join(ATTEMPT_KINDS)}.")
    detail: str
    source: Literal["code", "jail", "host", "gateway"] = Field(
        description="Who saw it: the host reading the code, the jail's tripwire, the host's "
        "utility service, the model gateway."
    )
    run: str = Field(description="The run it was seen in (`train group 1`, `code`, ...).")


class GroupRun(BaseModel):
    """An improver on one downstream task (a group of train tasks): what it returned."""

    model_config = ConfigDict(extra="forbid")

    group: int
    solution_id: str | None = Field(None, description="The returned solution's snapshot.")
    utility: float = Field(description="The host's score of the returned solution (0: none).")
    utility_calls: int = 0
    model_calls: int = 0
    error: str | None = None


class ImproverScore(Record):
    kind: Literal["stop_improver"] = "stop_improver"
    digest: str
    snapshot_id: str | None
    status: Literal["scored", "contaminated"]
    train_meta_utility: float = 0.0
    groups: list[GroupRun] = Field(default_factory=list)
    attempts: list[Attempt] = Field(default_factory=list)
    reason: str | None = None

    @property
    def flagged(self) -> bool:
        return bool(self.attempts)


class SolutionScore(Record):
    kind: Literal["stop_solution"] = "stop_solution"
    digest: str
    snapshot_id: str
    task_set: str
    score: float
    tasks: int
    status: Literal["scored", "contaminated"] = "scored"
    eval_set: str | None = None


class RunRecord(Record):
    """Round k's improver applied to its own code, the meta-utility as its utility."""

    kind: Literal["stop_run"] = "stop_run"
    round: int
    parent_id: str
    parent_digest: str
    returned_digest: str | None
    error: str | None = None
    utility_calls: int = 0
    model_calls: int = 0
    tried: list[str] = Field(
        default_factory=list, description="Digests of the improvers it scored, in order."
    )
    attempts: list[Attempt] = Field(default_factory=list)


class RoundRecord(Record):
    kind: Literal["stop_round"] = "stop_round"
    round: int
    slot: str = ONLY_SLOT
    status: Literal["evaluated", "rejected"]
    snapshot_id: str | None = None
    parent_id: str | None = None
    digest: str | None = None
    train_meta_utility: float | None = None
    dev_score: float | None = Field(None, description="The dev meta-utility.")
    dev_tasks: int = 0
    flagged: int = Field(0, description="Circumvention attempts of this improver.")
    attempt_kinds: list[str] = Field(default_factory=list)
    reason: str | None = None
    eval_set: str | None = None


class Promotion(Record):
    kind: Literal["stop_promotion"] = "stop_promotion"
    snapshot_id: str
    round: int
    slot: str = ONLY_SLOT
    dev_score: float
    ranking: list[tuple[int, str, float]]


class StopTest(Record):
    kind: Literal["stop_test"] = "stop_test"
    snapshot_id: str
    test_score: float = Field(description="The test meta-utility: mean over the groups.")
    test_tasks: int
    per_group: list[float]
    eval_set: str | None = None


class Layout:
    def __init__(self, records: Path) -> None:
        self.folder = records / "stop"

    def round(self, k: int) -> Path:
        return self.folder / f"round-{k:03d}.json"

    def run(self, k: int) -> Path:
        return self.folder / f"round-{k:03d}-run.json"

    def content(self, k: int) -> Path:
        return self.folder / f"round-{k:03d}-content.json"

    def improver(self, digest: str) -> Path:
        return self.folder / "improvers" / f"{digest}.json"

    def improver_content(self, digest: str) -> Path:
        return self.folder / "improvers" / f"{digest}-content.json"

    def solution(self, digest: str, task_set: str) -> Path:
        return self.folder / "solutions" / f"{digest}-{task_set}.json"

    def solution_rollouts(self, digest: str, task_set: str) -> Path:
        return self.folder / "solutions" / f"{digest}-{task_set}.jsonl"

    def solution_content(self, digest: str) -> Path:
        return self.folder / "solutions" / f"{digest}-content.json"

    @property
    def promotion(self) -> Path:
        return self.folder / "promotion.json"

    @property
    def test(self) -> Path:
        return self.folder / "test.json"
