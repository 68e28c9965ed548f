"""Design candidate 3 (and above): a runtime mechanism, an answer normaliser in Python.

MiniAgent's task completion detection (`final_answer(reply)` in `runtime/agent.py`, found by
its docstring as `modular_rsi/places.py` finds a module's place) gains, right after its
docstring, code that makes the final answer bare: without a `Final answer:` / `Answer:` /
`Label:` lead-in and without a trailing period. Only when that changes the answer does it
call `activation_beacon("answer_normaliser")` (imported `from runtime.beacon import
activation_beacon`, next to the file's other `runtime.` imports) and return the new answer; a
clean answer passes untouched and the beacon stays silent.

1. `editor view` of `runtime/agent.py`.
2. Two `str_replace`s in one reply: the import (added to the file's `from runtime.beacon
   import ...` line if it has one; skipped when it already imports `activation_beacon`), and
   the place's whole text with the block inserted.
3. The final text. A file that already carries the beacon, or has no such place or import
   line to anchor on, is left alone and the final text says why.
"""

from __future__ import annotations

import re

from flashrsi_dagster.offline_model.conversation import Reply, ToolCall
from flashrsi_dagster.offline_model.policies.evolver.design import Design, Done, edited, finish
from flashrsi_dagster.offline_model.policies.modular_rsi.places import find_places, insert_lines
from flashrsi_dagster.offline_model.policies.worker import editor_call, file_lines

AGENT = "runtime/agent.py"
MECHANISM = "answer_normaliser"
IMPORT = "from runtime.beacon import activation_beacon"
BEACON = f'activation_beacon("{MECHANISM}")'
NORMALISER = (
    "# Answer normaliser: the bare answer, without a lead-in such as `Label:` or a trailing",
    "# period; the beacon marks the runs where that changed the answer.",
    "if not reply.tool_calls and reply.text:",
    "    answer = reply.text.strip()",
    '    for lead in ("final answer:", "answer:", "label:"):',
    "        if answer.lower().startswith(lead):",
    "            answer = answer[len(lead) :].strip()",
    '    answer = answer.rstrip(".").strip()',
    "    if answer and answer != reply.text:",
    f"        {BEACON}",
    "        return answer",
)
_IMPORTED = re.compile(r"^from runtime\.beacon import .*\bactivation_beacon\b")
_FROM_BEACON = re.compile(r"^from runtime\.beacon import (?P<names>[\w ,]+)$")
WHO = "Simulator Evolver, candidate {index} (a runtime answer normaliser)"


def answer_normaliser(done: Done, design: Design) -> Reply:
    who = WHO.format(index=design.index)
    view = done.get(("editor", "view", AGENT))
    if view is None:
        return Reply(tool_calls=(editor_call(command="view", path=AGENT),))
    lines = file_lines(view)
    if lines is None:
        return finish(f"{who}: there is no {AGENT}; nothing was changed.", "runtime", done)
    if any(BEACON in line for line in lines):
        said = f"{who}: {AGENT} already normalises the answer; nothing was changed."
        return finish(said, "runtime", done)
    calls = normaliser_calls(lines)
    if isinstance(calls, str):
        return finish(f"{who}: {calls}; nothing was changed.", "runtime", done)
    if not edited(done, AGENT):
        return Reply(tool_calls=calls)
    said = (
        f"{who}: `final_answer` in {AGENT} now strips a `Label:`-style lead-in and a trailing "
        f"period from the final answer, and calls `{BEACON}` only when that changes it."
    )
    return finish(said, "runtime", done)


def normaliser_calls(lines: list[str]) -> tuple[ToolCall, ...] | str:
    """The edits of the agent file, or why there are none."""
    place = next(
        (p for p in find_places(lines, "task_completion_detection") if "reply" in p.parameters),
        None,
    )
    if place is None:
        return f"{AGENT} has no task completion detection place taking the model's `reply`"
    block = [place.indent + line for line in NORMALISER]
    change = insert_lines(lines, place, place.body, block, "the answer normaliser")
    body = editor_call(command="str_replace", path=AGENT, old_str=change.old, new_str=change.new)
    if any(_IMPORTED.match(line) for line in lines):
        return (body,)
    imported = _import_edit(lines)
    if imported is None:
        return f"{AGENT} has no single-line import to put the beacon's import beside"
    old, new = imported
    return (editor_call(command="str_replace", path=AGENT, old_str=old, new_str=new), body)


def _import_edit(lines: list[str]) -> tuple[str, str] | None:
    """(old, new) that imports the beacon: the name added to a one-line `from runtime.beacon
    import ...`, else a line of its own before the first `from runtime.` import or after the
    last top-level import; only a line that occurs once and is a whole import is touched."""
    text = "\n".join(lines)
    imports = [
        line
        for line in lines
        if line.startswith(("import ", "from "))
        and not line.rstrip().endswith(("(", "\\"))
        and text.count(line) == 1
    ]
    for line in imports:
        if match := _FROM_BEACON.match(line):
            names = sorted({*map(str.strip, match["names"].split(",")), "activation_beacon"})
            return line, f"from runtime.beacon import {', '.join(names)}"
    if runtime := [line for line in imports if line.startswith("from runtime.")]:
        return runtime[0], f"{IMPORT}\n{runtime[0]}"
    if imports:
        return imports[-1], f"{imports[-1]}\n{IMPORT}"
    return None
