"""The instruction the improver (the parent's harness, on a copy of itself) is given."""

from __future__ import annotations

from flashrsi_dagster import instruction_markers
from flashrsi_dagster.algorithms.dgm import markers

SPECIAL_ENTRIES = (markers.IMPROVE_WORKFLOW, markers.STREAMLINE_TOOLS)
_SPECIAL = {
    markers.IMPROVE_WORKFLOW: "Improve how you improve yourself: the way you read evaluation "
    "logs and decide on edits, written where you will read it next time.",
    markers.STREAMLINE_TOOLS: "Make your tools smaller and simpler where they do more than "
    "your tasks need.",
}


def instruction(entry: str, logs: str, prompt_file: str | None) -> str:
    """The self-modification request: the folder is a copy of the agent's own harness."""
    focus = _SPECIAL.get(entry) or (
        f"Your evaluation failed train task `{entry}`: change your own harness so that you "
        "solve tasks like it, without breaking what works."
    )
    prompt = f"{instruction_markers.PROMPT_FILE} {prompt_file}\n" if prompt_file else ""
    return (
        "This folder is a copy of your own harness: the files you run with (prompts, tools, "
        "runtime code, configuration). Improve yourself by editing them. Your new version "
        "must still load and still be able to edit files, or it is discarded.\n"
        f"{markers.LOGS} .history\n"
        "(your own evaluation logs: one JSON trajectory per train task, read-only)\n"
        f"{prompt}{markers.ENTRY} {entry}\n{focus}\n"
    )
