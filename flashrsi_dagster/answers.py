"""Structured answers of model roles: one JSON object in a run's final answer, bare or in a
```json fenced block (the last fenced block that parses wins), validated by a pydantic model.
Anything else is a `ProtocolError` naming the role and why.

`ask_until_read` is the one retry mechanism for such answers (seed 004's SemanticNode): the
parse error goes back to the model in a fresh run of the same instruction, a bounded number
of times, each run kept; only when the retries are spent does the algorithm decide what the
protocol error costs (ModularRSI aborts, the Evolver's round is `errored`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from flashrsi_dagster.records import Trajectory

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


RETRY_NOTE = """

Your previous answer to this could not be read: {error}
Answer again, with the JSON object exactly as asked above."""


def ask_until_read[T](
    run: Callable[[str], Trajectory],
    read: Callable[[Trajectory], T],
    instruction: str,
    *,
    retries: int,
    keep: Callable[[Trajectory, int | None], None],
) -> T:
    """`read(run(instruction))`; while `read` raises `ProtocolError`, the instruction again
    with the error appended, up to `retries` more runs. Every run is kept, in `finally`, as
    soon as it is read: `keep(run, n)` with `n` (1, 2, …) for a malformed answer that was
    retried, None for the run that decided (read, failed otherwise, or the last malformed).
    When the retries are spent, the last `ProtocolError`, saying how many answers failed."""
    prompt = instruction
    for attempt in range(retries + 1):
        trajectory = run(prompt)
        retried: int | None = None
        try:
            return read(trajectory)
        except ProtocolError as exc:
            if attempt == retries:
                tries = f" ({attempt + 1} answers, none readable)" if attempt else ""
                raise ProtocolError(f"{exc}{tries}") from None
            retried = attempt + 1
            prompt = instruction + RETRY_NOTE.format(error=exc)
        finally:
            keep(trajectory, retried)
    raise AssertionError("unreachable: the last attempt returns or raises")


def attempt_name(name: str, retried: int | None) -> str:
    """The record name of one attempt: `name` for the run that decided, `name-malformed-<n>`
    for the n-th malformed answer that was retried."""
    return name if retried is None else f"{name}-malformed-{retried}"


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
