"""What the Evolver's model calls answer (read by `answers.read_answer`):

- diagnosis: `{"diagnoses": [{"task": id, "why": class, "where": hint, "evidence": text}]}`,
  each a failing train task (no other id, each once) and a WHY of the taxonomy;
- the WHY pick (the judgement that chooses the round's WHYs):
  `{"whys": [class, ...], "reason": text}` — read leniently: unknown classes are dropped and
  an empty pick hands the choice to the formula (`choose.choose_whys`), never an abort.
"""

from __future__ import annotations

from collections.abc import Collection

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.algorithms.evolver.failure_map import Diagnosis
from flashrsi_dagster.answers import ProtocolError, read_answer


class _Diagnosed(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: str = Field(min_length=1)
    why: str = Field(min_length=1)
    where: str | None = None
    evidence: str = ""


class _Diagnoses(BaseModel):
    model_config = ConfigDict(extra="forbid")

    diagnoses: list[_Diagnosed]


class WhyPick(BaseModel):
    model_config = ConfigDict(extra="forbid")

    whys: list[str]
    reason: str = ""


def read_diagnoses(
    answer: str | None, *, failing: Collection[str], whys: Collection[str], round: int
) -> list[Diagnosis]:
    found = read_answer(answer, _Diagnoses, "the diagnosis").diagnoses
    seen: set[str] = set()
    for item in found:
        if item.task not in failing:
            raise ProtocolError(
                f"the diagnosis names task {item.task!r}, which is not a failing train task"
            )
        if item.task in seen:
            raise ProtocolError(f"the diagnosis names task {item.task!r} twice")
        if item.why not in whys:
            raise ProtocolError(
                f"the diagnosis gives {item.task!r} the WHY {item.why!r}, which is not in the "
                f"taxonomy ({', '.join(sorted(whys))})"
            )
        seen.add(item.task)
    return [Diagnosis(round=round, **item.model_dump()) for item in found]


def read_why_pick(answer: str | None) -> WhyPick | None:
    """The model's pick, or None when its answer cannot be read (the formula then decides)."""
    try:
        return read_answer(answer, WhyPick, "the WHY pick")
    except ProtocolError:
        return None
