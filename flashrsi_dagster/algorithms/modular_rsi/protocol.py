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

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

MAX_ANSWER_CHARS = 1_000_000
"""The longest structured answer read: findings and verdicts are short; megabytes of them
would be copied into the edit prompt and the records."""


class ProtocolError(RuntimeError):
    """A model role's answer that does not follow the protocol (names the role and why)."""


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
    found = _parse(answer, Findings, "the analysis").findings
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
    return _parse(answer, Verdict, "the review")


def _parse[M: BaseModel](answer: str | None, model: type[M], what: str) -> M:
    if not answer or not answer.strip():
        raise ProtocolError(f"{what} gave no answer; expected a JSON object")
    if len(answer) > MAX_ANSWER_CHARS:
        raise ProtocolError(
            f"{what} answered {len(answer)} characters, over the protocol's limit of "
            f"{MAX_ANSWER_CHARS}"
        )
    value = _json_object(answer)
    if value is None:
        raise ProtocolError(f"{what} answered without a JSON object: {answer[:200]!r}")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in exc.errors()
        )
        raise ProtocolError(f"{what}'s JSON does not follow the protocol: {problems}") from None


def _json_object(answer: str) -> Any:
    blocks = _fenced_blocks(answer)
    for text in [*reversed(blocks), answer.strip()]:
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _fenced_blocks(answer: str) -> list[str]:
    """The bodies of the answer's fenced blocks, in order: a block opens at a line ending in
    ```` ``` ```` or ```` ```json ```` and closes at the next line that starts, after blanks,
    with ```` ``` ````. Line by line, so linear in the answer (a regex over the whole answer
    backtracked cubically on a fence followed by blank lines: minutes for 8 KB)."""
    blocks: list[str] = []
    body: list[str] | None = None
    for line in answer.split("\n"):
        if body is None:
            end = line.rstrip()
            if end.endswith("```") or end.endswith("```json"):
                body = []
        elif line.lstrip().startswith("```"):
            blocks.append("\n".join(body))
            body = None
        else:
            body.append(line)
    return blocks
