"""What an Evolver instruction tells the simulator, and how its structured answers are written.

The phase is the value of the `Evolver phase:` line (`algorithms/evolver/markers.py`, the
first line of every Evolver instruction), read from the latest user message that has one (a
MiniAgent run has one user message: the instruction). Classes are listed as lines
`- <name>: <description>` (the diagnosis's taxonomy, the consolidation's proposals).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from flashrsi_dagster.algorithms.evolver import markers
from flashrsi_dagster.offline_model.conversation import Conversation, Reply
from flashrsi_dagster.offline_model.policies.markers import marker, marker_value

PHASES = ("induce", "consolidate", "diagnose", "pick", "design")
_PHASE = marker(markers.EVOLVER_PHASE)
_CLASS = re.compile(r"^[ \t]*- (?P<name>[a-z][a-z0-9_]{1,40}): (?P<description>\S.*?)[ \t]*$")


@dataclass(frozen=True)
class Instruction:
    phase: str
    text: str
    """The whole instruction."""


def read_instruction(conversation: Conversation) -> Instruction | None:
    """The Evolver instruction in the conversation, or None (no phase line, or an unknown
    phase)."""
    texts = [t for t in conversation.user_texts() if marker_value(_PHASE, t) is not None]
    if not texts:
        return None
    phase = marker_value(_PHASE, texts[-1])
    return Instruction(phase, texts[-1]) if phase in PHASES else None


def listed_classes(lines: list[str]) -> dict[str, str]:
    """Classes listed as `- <name>: <description>` lines, name -> description, in order."""
    found: dict[str, str] = {}
    for line in lines:
        if match := _CLASS.match(line):
            found.setdefault(match["name"], match["description"])
    return found


def json_reply(lead: str, value: dict[str, Any]) -> Reply:
    """A final text: one sentence, then the answer in a ```json block."""
    body = json.dumps(value, ensure_ascii=False, indent=2)
    return Reply(text=f"{lead}\n\n```json\n{body}\n```")
