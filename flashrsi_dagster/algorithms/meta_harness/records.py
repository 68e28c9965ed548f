"""Meta-Harness records: what each round did, written atomically and redacted.

records/meta_harness/
  round-000.json            RoundRecord of the seed evaluation
  round-000-dev.jsonl       its rollouts (the engine's append-only record)
  round-001-worker.json     the Worker's trajectory of round 1 (its candidate slot c0)
  round-001-edit.json       EditRecord: committed / noop / refused / worker_failed
  round-001-content.json    ContentVerdict: the contamination check of a committed edit
                            (never copied into the Worker's history)
  round-001-editing.json    EditingVerdict (`worker.harness: adopted`): whether its harness,
                            run as the improver, passes the editing check
  round-001.json            RoundRecord of round 1, c0 (evaluated or rejected)
  round-001-dev.jsonl       …
  round-001-c1-worker.json  the same for round 1's candidate slot c1 (`candidates_per_round`
  round-001-c1-edit.json    >= 2): a slot other than c0 puts its name after the round, each
  round-001-c1.json         candidate writes only its own files, so the candidates of a
  round-001-c1-dev.jsonl    round can run side by side
  promotion.json            Promotion
  test.jsonl, test.json     the sealed test evaluation of the promoted snapshot
  test-round-002-c1.json    (`sealed_test_frontier`) the sealed test of another member of the
  test-round-002-c1.jsonl   frontier frozen in the promotion, once each, after the promoted's
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from flashrsi_dagster.algorithms.base import ONLY_SLOT
from flashrsi_dagster.decisions.adoption import Refusal
from flashrsi_dagster.records import Record
from flashrsi_dagster.records.sealed_test import TestResult as TestResult  # shared


class EditRecord(Record):
    kind: Literal["edit"] = "edit"
    round: int
    slot: str = ONLY_SLOT
    status: Literal["committed", "noop", "refused", "worker_failed"]
    snapshot_id: str | None = None
    parent_id: str
    reason: str | None = None
    changed: list[str] = Field(default_factory=list)
    produced_by: str | None = Field(
        None,
        description="The snapshot whose harness made the edit (`worker.harness: adopted`); "
        "None: the Worker role's own harness.",
    )
    refused_diff: str | None = Field(
        None,
        description="A refused edit's code: its unified diff against the seed, bounded "
        "(`refused.py`), so later Workers can learn from it; None for any other edit.",
    )


class RoundRecord(Record):
    kind: Literal["round"] = "round"
    round: int
    slot: str = ONLY_SLOT
    status: Literal["evaluated", "rejected", "worker_failed"]
    snapshot_id: str | None = None
    parent_id: str | None = None
    produced_by: str | None = Field(
        None,
        description="The snapshot whose harness made the edit (`worker.harness: adopted`); "
        "None: the Worker role's own harness.",
    )
    dev_score: float | None = None
    dev_tasks: int = 0
    dev_input_tokens: int | None = Field(
        None,
        description="The target's input (context) tokens over the final dev rollouts; None "
        "for a candidate not evaluated, or evaluated before it was recorded.",
    )
    dev_output_tokens: int | None = Field(
        None, description="The target's output tokens over the final dev rollouts."
    )
    reason: str | None = None
    eval_set: str | None = Field(
        None, description="The dev evaluation set's version (`dev/e1`); None before versioning."
    )

    can_edit: bool | None = Field(
        None,
        description="`worker.harness: adopted`: whether its harness passed the editing check "
        "(only one that did may be the improver); None: not checked (`fixed`).",
    )

    @property
    def improver_failed(self) -> bool:
        """An adopted harness (`produced_by`) failed as the Worker: the candidate is
        rejected, the harness passed over as improver, and the search goes on (the Worker
        role's own harness failing aborts it: nothing else could edit)."""
        return self.status == "worker_failed" and self.produced_by is not None

    @property
    def improver_gave_nothing(self) -> bool:
        """An adopted harness ran as the Worker, ended well and gave no candidate to score (no
        change, or one the host refused or found contaminated): passed over as the improver
        like one that failed, or a harness that switched off its own editor would keep its
        turn, and with it its lead, for good (`tests/sabotage/test_adopted.py`)."""
        return self.status == "rejected" and self.produced_by is not None

    @property
    def aborts(self) -> bool:
        """The Worker role's own harness failed: nothing else could edit, the search ends."""
        return self.status == "worker_failed" and self.produced_by is None


class Promotion(Record):
    kind: Literal["promotion"] = "promotion"
    snapshot_id: str
    round: int
    slot: str = ONLY_SLOT
    dev_score: float
    ranking: list[tuple[int, str, float]] = Field(
        description="(round, snapshot id, dev score), best first; ties keep the earlier "
        "round, then the lower slot (the snapshot id names the candidate: every candidate "
        "commits a snapshot of its own)."
    )
    frontier: list[tuple[int, str, str]] = Field(
        default_factory=list,
        description="(round, slot, snapshot id) of each member of the dev score x context "
        "tokens Pareto frontier when it was made (`frontier.py`), best dev score first: the "
        "members `sealed_test_frontier` tests, frozen with the promotion.",
    )
    refused: list[Refusal] = Field(
        default_factory=list,
        description="Candidates ranked above the promoted one whose adoption the host "
        "refused (`decisions.adoption`: they violate the declared trade-off rule).",
    )


class Layout:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def of(cls, records: Path) -> Layout:
        """The Meta-Harness records of an experiment whose records folder is `records`."""
        return cls(records / "meta_harness")

    def round(self, k: int, slot: str = ONLY_SLOT) -> Path:
        return self.folder / f"{candidate_stem(k, slot)}.json"

    def rollouts(self, k: int, slot: str = ONLY_SLOT) -> Path:
        return self.folder / f"{candidate_stem(k, slot)}-dev.jsonl"

    def worker(self, k: int, slot: str = ONLY_SLOT) -> Path:
        return self.folder / f"{candidate_stem(k, slot)}-worker.json"

    def edit(self, k: int, slot: str = ONLY_SLOT) -> Path:
        return self.folder / f"{candidate_stem(k, slot)}-edit.json"

    def editing(self, k: int, slot: str = ONLY_SLOT) -> Path:
        return self.folder / f"{candidate_stem(k, slot)}-editing.json"

    def content(self, k: int, slot: str = ONLY_SLOT) -> Path:
        return self.folder / f"{candidate_stem(k, slot)}-content.json"

    @property
    def promotion(self) -> Path:
        return self.folder / "promotion.json"

    @property
    def test_rollouts(self) -> Path:
        return self.folder / "test.jsonl"

    @property
    def test(self) -> Path:
        return self.folder / "test.json"

    def frontier_test(self, k: int, slot: str = ONLY_SLOT) -> Path:
        """A frontier member's sealed test (`sealed_test_frontier`), not the promoted one's."""
        return self.folder / f"test-{candidate_stem(k, slot)}.json"

    def frontier_test_rollouts(self, k: int, slot: str = ONLY_SLOT) -> Path:
        return self.folder / f"test-{candidate_stem(k, slot)}.jsonl"


def candidate_stem(k: int, slot: str = ONLY_SLOT) -> str:
    """`round-003` for slot c0 (the only slot before `candidates_per_round`, so experiments
    from then resume), `round-003-c1` for another slot of round 3."""
    return f"round-{k:03d}" if slot == ONLY_SLOT else f"round-{k:03d}-{slot}"
