"""Taxonomy induction's two stages (`evolver/taxonomy.induce`), simulated.

- `induce`: classes proposed from the failure samples (the text after the first `--- failure`
  line): the classes a sample's lines show (`SHOWN`: turn or time limits, runs without an
  answer, errors, classification tasks with `Labels:`) first, then a generic set (`GENERIC`),
  on purpose with near-duplicates (`DUPLICATES`: `incorrect_answer` of `wrong_answer`, ...)
  for the consolidation to merge. Always at least 9 classes.
- `consolidate`: the listed classes (`- <name>: <description>`) without those whose
  near-duplicate original is listed too, cut to 14; when that leaves fewer than the minimum
  the instruction asks for (`keep between <minimum> and 14`, default 7), merged classes are
  kept after all, in the listed order, up to the minimum.
"""

from __future__ import annotations

import re

from flashrsi_dagster import instruction_markers as markers
from flashrsi_dagster.offline_model.conversation import Reply
from flashrsi_dagster.offline_model.policies.evolver.instruction import (
    Instruction,
    json_reply,
    listed_classes,
)

MAX_CLASSES = 14
DEFAULT_MINIMUM = 7
_LINE_START = re.MULTILINE | re.IGNORECASE
SHOWN = (
    (
        re.compile(r"max_turns|turn limit|timed out|^Status: timeout", _LINE_START),
        (
            ("turn_limit", "the run ended at the turn or time limit without an answer"),
            ("timeout_or_loop", "the agent looped or ran out of time or turns"),
        ),
    ),
    (
        re.compile(r"^Answer: \(none\)|no final answer", _LINE_START),
        (("no_answer", "the run ended without giving an answer"),),
    ),
    (
        re.compile(r"^Status: (?:error|infra_error)|Traceback", _LINE_START),
        (
            ("tool_error", "a tool or command failed and the agent did not recover"),
            ("command_failure", "a command failed and the run went on regardless"),
        ),
    ),
    (
        re.compile(rf"^\s*{re.escape(markers.LABELS)}", _LINE_START),
        (
            ("missing_cue", "the text carries a cue for its label that the harness never names"),
            ("misleading_cue", "a cue in the text points the agent to another label"),
            ("wrong_default", "nothing in the text decided and the fallback label was wrong"),
        ),
    ),
)
GENERIC = (
    ("wrong_answer", "the run ended with an answer other than the expected one"),
    ("incorrect_answer", "the answer given differs from the expected answer"),
    ("misread_task", "the agent answered a different question than the one asked"),
    ("missing_knowledge", "the agent lacked a fact or convention the task needed"),
    ("format_error", "the answer was not in the form the task asked for"),
    ("output_format", "the output did not follow the required format"),
    ("ignored_instruction", "the agent did not follow an explicit instruction of the task"),
    ("incomplete_work", "part of what the task required is missing"),
    ("unverified_finish", "the agent finished without checking its result"),
)
DUPLICATES = {
    "incorrect_answer": "wrong_answer",
    "output_format": "format_error",
    "timeout_or_loop": "turn_limit",
    "command_failure": "tool_error",
}
"""Near-duplicate -> the class it duplicates."""
_SAMPLES = re.compile(r"^--- failure ", re.MULTILINE)
_MINIMUM = re.compile(r"keep between\s+(?P<minimum>\d+)\s+and\s+\d+")


def induce(instruction: Instruction) -> Reply:
    start = _SAMPLES.search(instruction.text)
    samples = instruction.text[start.start() :] if start else ""
    shown = [row for pattern, rows in SHOWN if pattern.search(samples) for row in rows]
    whys = [{"name": n, "description": d} for n, d in dict([*shown, *GENERIC]).items()]
    count = len(_SAMPLES.findall(samples))
    lead = f"Simulator Evolver: {len(whys)} WHY classes proposed from {count} failure(s)."
    return json_reply(lead, {"whys": whys})


def consolidate(instruction: Instruction) -> Reply:
    proposed = listed_classes(instruction.text.splitlines())
    match = _MINIMUM.search(instruction.text)
    minimum = int(match["minimum"]) if match else DEFAULT_MINIMUM
    merged = [name for name in proposed if DUPLICATES.get(name) in proposed]
    kept = [name for name in proposed if name not in merged]
    kept += merged[: max(0, minimum - len(kept))]
    final = [name for name in proposed if name in kept][:MAX_CLASSES]
    said = ", ".join(f"{name} into {DUPLICATES[name]}" for name in merged if name not in final)
    lead = f"Simulator Evolver: kept {len(final)} WHY classes" + (
        f"; merged {said}." if said else "."
    )
    return json_reply(lead, {"whys": [{"name": n, "description": proposed[n]} for n in final]})
