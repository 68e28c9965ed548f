"""Structured answers of model roles: one JSON object in a run's final answer, bare or in a
```json fenced block (the last fenced block that parses wins), validated by a pydantic model.
Anything else is a `ProtocolError` naming the role and why; the algorithm decides what a
protocol error costs (ModularRSI and the Evolver abort, keeping every record)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ValidationError

MAX_ANSWER_CHARS = 1_000_000
"""The longest structured answer read: findings, verdicts and diagnoses are short; megabytes
of them would be copied into the next prompt and the records."""


class ProtocolError(RuntimeError):
    """A model role's answer that does not follow the protocol (names the role and why)."""


def read_answer[M: BaseModel](answer: str | None, model: type[M], what: str) -> M:
    """The answer's JSON object as `model`; `what` names the role's answer in errors."""
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
