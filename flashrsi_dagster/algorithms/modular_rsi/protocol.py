"""What ModularRSI's model roles answer, and how an answer is read.

Two answers are structured, each a JSON object in the run's final answer (bare, or in a
```json fenced block; the last fenced block wins when there are several):

- the analysis (the Worker): `{"findings": [{"file": str, "tasks": [str, ...],
  "reason": str, "change": str}, ...]}` — `file` one of the module's files, `tasks` the ids
  of the supporting tasks (at least one, all from the batch), `reason` why, `change` what to
  do. An empty list means nothing to change.
- the review (the configured reviewer): `{"verdict": "accept" | "reject", "reason": str}`.

An answer over `MAX_ANSWER_CHARS` characters is refused unread. Anything else is a
`ProtocolError`: the seed aborts the experiment on one (every record is kept),
unlike a rejected edit, which only uses up the batch's attempt.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from flashrsi_dagster.answers import MAX_ANSWER_CHARS, ProtocolError, read_answer


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str = Field(min_length=1)
    tasks: tuple[str, ...] = Field(min_length=1)
    reason: str = Field(min_length=1)
    change: str = Field(min_length=1)

    @field_validator("tasks")
    @classmethod
    def _distinct(cls, tasks: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(tasks))


class Findings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    findings: list[Finding]


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Literal["accept", "reject"]
    reason: str = Field(min_length=1)


def read_findings(answer: str | None, *, files: tuple[str, ...], tasks: set[str]) -> list[Finding]:
    """The analysis's findings; a finding on a file outside the module or citing a task not in
    the batch is a protocol error (the Worker was told both)."""
    found = read_answer(answer, Findings, "the analysis").findings
    for finding in found:
        if finding.file not in files:
            raise ProtocolError(
                f"the analysis named {finding.file!r}, not one of the module's files "
                f"({', '.join(files)})"
            )
        unknown = [t for t in finding.tasks if t not in tasks]
        if unknown:
            raise ProtocolError(
                f"the analysis cited task(s) {', '.join(unknown)} that are not in the batch"
            )
    return found


def read_verdict(answer: str | None) -> Verdict:
    return read_answer(answer, Verdict, "the review")


__all__ = [
    "MAX_ANSWER_CHARS",
    "Finding",
    "Findings",
    "ProtocolError",
    "Verdict",
    "read_findings",
    "read_verdict",
]
