"""The design phase's brief and ending, shared by the three mechanisms.

The instruction (`evolver/prompts.design_instruction`) names the WHY (`WHY: <class>`), the
prompt file (`Prompt file: <path>`, default `prompts/system.md`; an absolute path or `..` is
refused), the candidate's index (`candidate <i> of <n>`, default 1) and, under `Failing train
tasks of this class`, the examples as `- <task>: <evidence>` lines (`evidence.py`).

Every design ends with a final text: what the mechanism did (or why it changed nothing), a
note for each edit the editor refused, and a last line `WHERE: prompt` or `WHERE: runtime`
(the candidate's own account of where it acts, kept for audit only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flashrsi_dagster import instruction_markers as markers
from flashrsi_dagster.algorithms.evolver import markers as evolver_markers
from flashrsi_dagster.offline_model.conversation import Reply
from flashrsi_dagster.offline_model.policies.evolver.evidence import Evidence, read_evidence
from flashrsi_dagster.offline_model.policies.markers import marker, marker_value, safe_path

DEFAULT_PROMPT = "prompts/system.md"
EDITS = ("create", "str_replace", "insert")
_WHY, _PROMPT = marker(evolver_markers.WHY), marker(markers.PROMPT_FILE)
_INDEX = re.compile(r"\bcandidate\s+(?P<index>\d+)\s+of\s+(?P<count>\d+)")
_EXAMPLES = "Failing train tasks of this class"

Done = dict[tuple[str, ...], str]
"""Tool results by request (`worker.results_by_request`)."""


@dataclass(frozen=True)
class Design:
    why: str
    prompt: str
    index: int
    examples: tuple[Evidence, ...]
    """The examples whose evidence could be read, in order."""


def read_design(text: str) -> Design | str:
    """The design's brief, or the reason to refuse it."""
    prompt = marker_value(_PROMPT, text) or DEFAULT_PROMPT
    if not safe_path(prompt):
        return (
            f"Simulator Evolver: refusing the prompt file {prompt!r}: it only works with "
            "relative paths inside its working directory; nothing was changed."
        )
    match = _INDEX.search(text)
    return Design(
        why=marker_value(_WHY, text) or "",
        prompt=prompt,
        index=int(match["index"]) if match else 1,
        examples=tuple(filter(None, map(read_evidence, _example_lines(text)))),
    )


def _example_lines(text: str) -> list[str]:
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(_EXAMPLES)), len(lines))
    found = []
    for line in lines[start + 1 :]:
        if not line.startswith("- "):
            break
        found.append(line)
    return found


def edited(done: Done, path: str) -> bool:
    """Whether an edit of the file is already in the conversation."""
    return any(("editor", command, path) in done for command in EDITS)


def finish(said: str, where: str, done: Done) -> Reply:
    """The design's final text (the module docstring's ending)."""
    failed = [
        f"An edit failed: {result.strip()}"
        for key, result in done.items()
        if key[0] == "editor" and key[1] in EDITS and result.startswith("Error")
    ]
    return Reply(text="\n".join([said, *failed, f"WHERE: {where}"]))
