"""What a ModularRSI instruction tells the simulator: its marker lines, and the shell output
conventions its tool results come in.

Markers (`instruction_markers`), each on a line of its own: `ModularRSI phase: <phase>`,
`Module: <module>`, `Module files: <a>, <b>` and, for the integration and its repairs,
`Branch references: <folder>`. They are read from the latest user message that has a phase
line (a MiniAgent run has one user message: the instruction).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flashrsi_dagster.algorithms.modular_rsi import markers
from flashrsi_dagster.offline_model.conversation import Conversation
from flashrsi_dagster.offline_model.policies.markers import marker, marker_value, safe_path

PHASES = ("analysis", "edit", "review", "integration", "repair")
_EXIT = re.compile(r"\AExit code: (?P<code>-?\d+)[^\n]*\n?")
NO_OUTPUT = "(no output)"


_PHASE, _MODULE = marker(markers.PHASE), marker(markers.MODULE)
_FILES, _REFERENCES = marker(markers.MODULE_FILES), marker(markers.REFERENCES)


@dataclass(frozen=True)
class Instruction:
    phase: str
    module: str
    files: tuple[str, ...]
    """The module's files, in the order the instruction names them."""
    references: str | None
    """The folder of the branch checkouts (integration and repair only)."""
    text: str
    """The whole instruction."""


def read_instruction(conversation: Conversation) -> Instruction | None:
    """The ModularRSI instruction in the conversation, or None when it holds none (no phase
    marker, or an unknown phase)."""
    texts = [t for t in conversation.user_texts() if marker_value(_PHASE, t) is not None]
    if not texts:
        return None
    text = texts[-1]
    phase = marker_value(_PHASE, text)
    if phase not in PHASES:
        return None
    files = tuple(f.strip().strip("`") for f in (marker_value(_FILES, text) or "").split(","))
    return Instruction(
        phase=phase,
        module=marker_value(_MODULE, text) or "",
        files=tuple(f for f in files if f and safe_path(f)),
        references=marker_value(_REFERENCES, text),
        text=text,
    )


def shell_text(result: str) -> tuple[int | None, str]:
    """(exit code, output) of a `shell` tool result. MiniAgent heads it with `Exit code: N`
    and says `(no output)` for none; a plain output (another client's shell) has no code."""
    match = _EXIT.match(result)
    if match is None:
        return None, result
    output = result[match.end() :]
    return int(match["code"]), "" if output == NO_OUTPUT else output
