"""A train run as the Evolver's model calls read it: the diagnosis sees what the target was
asked, what it answered, what was expected and how the run ended; a flip's harm replay keeps
the whole conversation, cut. Only train trajectories come here (the sealed test has no path)."""

from __future__ import annotations

import json

from flashrsi_dagster.records import Trajectory

INSTRUCTION_CHARS = 1500


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def instruction_of(trajectory: Trajectory) -> str:
    """The task as the target was asked it: the first user message after the run header."""
    for message in trajectory.messages:
        if isinstance(message, dict) and message.get("role") == "user":
            return _text(message.get("content"))
    return ""


def run_summary(trajectory: Trajectory) -> str:
    """Lines the diagnosis reads (and the simulator's policy parses):

    Instruction:
    <the task's instruction, cut to INSTRUCTION_CHARS>
    Answer: <final answer, or (none)>
    Expected: <metadata.expected, or (not recorded)>
    Status: <status>[: <error message>]
    """
    instruction = instruction_of(trajectory)
    if len(instruction) > INSTRUCTION_CHARS:
        instruction = instruction[:INSTRUCTION_CHARS] + " …[cut]"
    expected = trajectory.metadata.get("expected")
    status = str(trajectory.status)
    if trajectory.error is not None:
        status += f": {' '.join(trajectory.error.message.split())[:300]}"
    answer = " ".join((trajectory.answer or "").split()) or "(none)"
    return "\n".join(
        [
            "Instruction:",
            instruction,
            f"Answer: {answer[:300]}",
            f"Expected: {expected if expected is not None else '(not recorded)'}",
            f"Status: {status}",
        ]
    )


def transcript(trajectory: Trajectory) -> str:
    """The whole conversation as text (for a harm replay, which cuts it)."""
    lines = []
    for message in trajectory.messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role", "?")
        body = _text(message.get("content"))
        calls = message.get("tool_calls")
        if calls:
            body += "\n" + json.dumps(calls, ensure_ascii=False)[:500]
        lines.append(f"[{role}] {body}")
    lines.append(f"[answer] {trajectory.answer or '(none)'} (score {trajectory.score})")
    return "\n".join(lines)
