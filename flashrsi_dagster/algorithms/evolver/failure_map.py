"""The persistent failure map: each failing train task's WHY, kept across rounds.

Round 1 uses the cold start's diagnoses. From round 2 the new parent's children are
re-diagnosed against it — a task a child fixed (fired), broke (flipped) or still fails — and
folded in; a parent is never diagnosed twice. A flip is kept with a harm-replay excerpt of the
regressed task's trajectory, for the next round's designs to learn from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["fixed", "flipped", "still_failing", "held"]
EXCERPT_CHARS = 2000


class Diagnosis(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str
    why: str
    where: str | None = Field(None, description="The model's WHERE hint (audit only).")
    evidence: str = ""
    round: int = 0


class Flip(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str
    round: int
    candidate: str = Field(description="The snapshot that broke the task.")
    excerpt: str = Field(description="The regressed run, cut to EXCERPT_CHARS.")


class FailureMap(BaseModel):
    model_config = ConfigDict(extra="forbid")

    whys: tuple[str, ...]
    failing: dict[str, Diagnosis] = Field(default_factory=dict)
    fixed: dict[str, int] = Field(default_factory=dict, description="task -> round it was fixed.")
    flips: list[Flip] = Field(default_factory=list)
    diagnosed_parents: list[str] = Field(default_factory=list)
    children: dict[str, dict[str, list[str]]] = Field(
        default_factory=dict,
        description="Per re-diagnosed child node: its tasks fixed, flipped and still failing "
        "against its parent.",
    )

    def failing_by_why(self) -> dict[str, int]:
        counts = dict.fromkeys(self.whys, 0)
        for diagnosis in self.failing.values():
            counts[diagnosis.why] += 1
        return counts

    def tasks_of(self, why: str) -> list[str]:
        return sorted(t for t, d in self.failing.items() if d.why == why)

    def with_children(
        self, children: Mapping[str, Mapping[str, Outcome]], flips: Sequence[Flip]
    ) -> FailureMap:
        """The map with a round's children re-diagnosed against their parent: per child the
        tasks it fixed, flipped and still fails, and its flips with their harm replay."""
        table = dict(self.children)
        for node, moved in children.items():
            table[node] = {
                kind: sorted(t for t, o in moved.items() if o == kind)
                for kind in ("fixed", "flipped", "still_failing")
            }
        return self.model_copy(update={"children": table, "flips": [*self.flips, *flips]})


def outcomes(parent: Mapping[str, float], child: Mapping[str, float]) -> dict[str, Outcome]:
    """Per task, a child against its parent (rates over K runs; a task passes at rate 1)."""
    result: dict[str, Outcome] = {}
    for task in sorted(set(parent) & set(child)):
        was, now = parent[task] >= 1.0, child[task] >= 1.0
        result[task] = (
            "held" if was and now else "flipped" if was else "fixed" if now else "still_failing"
        )
    return result


def fold(
    failure_map: FailureMap,
    parent_id: str,
    round: int,
    diagnoses: list[Diagnosis],
    moved: Mapping[str, Outcome],
    flips: Sequence[Flip] = (),
) -> FailureMap:
    """The map after diagnosing `parent_id`'s round: fixed tasks leave it, new or re-diagnosed
    failures enter with their WHY, flips are kept. A parent diagnosed before is refused."""
    if parent_id in failure_map.diagnosed_parents:
        raise ValueError(f"parent {parent_id[:12]} was already diagnosed")
    unknown = sorted({d.why for d in diagnoses} - set(failure_map.whys))
    if unknown:
        raise ValueError(f"diagnoses name WHY classes outside the taxonomy: {unknown}")
    failing = dict(failure_map.failing)
    fixed = dict(failure_map.fixed)
    for task, outcome in moved.items():
        if outcome == "fixed":
            failing.pop(task, None)
            fixed[task] = round
    for diagnosis in diagnoses:
        failing[diagnosis.task] = diagnosis.model_copy(update={"round": round})
    return failure_map.model_copy(
        update={
            "failing": failing,
            "fixed": fixed,
            "flips": [*failure_map.flips, *flips],
            "diagnosed_parents": [*failure_map.diagnosed_parents, parent_id],
        }
    )


def harm_replay(task: str, round: int, candidate: str, transcript: str) -> Flip:
    """A flip with the regressed run's transcript, cut in the middle when long."""
    if len(transcript) > EXCERPT_CHARS:
        half = EXCERPT_CHARS // 2
        transcript = transcript[:half] + "\n…[cut]…\n" + transcript[-half:]
    return Flip(task=task, round=round, candidate=candidate, excerpt=transcript)
