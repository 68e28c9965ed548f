"""The editing check's answers, for any improver model of the simulator: an instruction with
an `Editing check:` line (`algorithms/editing_check/markers.py`) is answered here, whichever
policy the model id names (`registry.py` wraps every algorithm's policy with `answering`),
so a harness the simulator plays can be checked for its editing ability.

Contract, with the MiniAgent `editor` tool (`{"command", "path", ...}`):

- `replace_line`: one `str_replace` of the `Find line:` line by the `Replace with:` line.
- `create_file`: one `create` with the text after the `Content:` line.
- `insert_after`: a `view` of the file, then one `insert` of the `Insert line:` line after
  the number of the line equal to `After line:` (the first such line).
- Once its edit has a result (whatever it says), a final text; the host, not the policy,
  decides whether the file is right. Without an `editor` tool, or with a path that is not
  relative and inside the folder, it answers in text and edits nothing.

The policy does what the instruction says with the tools the harness offers; it never knows
whether the harness's editor works: a broken `str_replace` fails on the host's check.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from flashrsi_dagster.algorithms.editing_check import markers as m
from flashrsi_dagster.offline_model.conversation import Conversation, Reply, ToolCall
from flashrsi_dagster.offline_model.policies.markers import marker, marker_value, safe_path

Policy = Callable[[Conversation], Reply]
EDITOR = "editor"
_CHECK, _FILE = marker(m.CHECK), marker(m.FILE)
_FIND, _REPLACE = marker(m.FIND), marker(m.REPLACE)
_AFTER, _INSERT = marker(m.AFTER), marker(m.INSERT)
_TAG = re.compile(r"</?\w+>")  # output wrappers such as <output>…</output>


def is_editing_check(conversation: Conversation) -> bool:
    texts = conversation.user_texts()
    return bool(texts) and marker_value(_CHECK, texts[0]) is not None


def answering(policy: Policy) -> Policy:
    """`policy`, except that an editing check is answered by `editing_check`."""

    def answer(conversation: Conversation) -> Reply:
        if is_editing_check(conversation):
            return editing_check(conversation)
        return policy(conversation)

    answer.__wrapped__ = policy  # type: ignore[attr-defined]
    return answer


def editing_check(conversation: Conversation) -> Reply:
    instruction = conversation.user_texts()[0]
    name, path = marker_value(_CHECK, instruction), marker_value(_FILE, instruction)
    if EDITOR not in conversation.tool_names():
        return Reply(text="Simulator editing check: no `editor` tool is offered; nothing edited.")
    if not path or not safe_path(path):
        return Reply(text=f"Simulator editing check: refusing the path {path!r}.")
    results = {_key(call): result for call, result in conversation.exchanges()}
    plan = _plan(name or "", path, instruction, results)
    if isinstance(plan, str):
        return Reply(text=plan)
    if (key := _key(plan)) in results:
        return Reply(text=f"Simulator editing check: {name} done on {path}: {results[key][:200]}")
    return Reply(tool_calls=(plan,))


def _plan(name: str, path: str, instruction: str, results: dict) -> ToolCall | str:
    """The one edit the task asks for (after a view, for an insertion)."""
    if name == "replace_line":
        old, new = marker_value(_FIND, instruction), marker_value(_REPLACE, instruction)
        return _editor("str_replace", path, old_str=old, new_str=new)
    if name == "create_file":
        _, found, content = instruction.partition(f"\n{m.CONTENT}\n")
        return _editor("create", path, file_text=content) if found else "no content given"
    if name == "insert_after":
        view = _editor("view", path)
        if (shown := results.get(_key(view))) is None:
            return view
        after, new = marker_value(_AFTER, instruction), marker_value(_INSERT, instruction)
        number = _line_number(shown, after or "")
        if number is None:
            return f"Simulator editing check: no line {after!r} in {path}; nothing edited."
        return _editor("insert", path, insert_line=number, new_str=new)
    return f"Simulator editing check: unknown task {name!r}; nothing edited."


def _line_number(view: str, line: str) -> int | None:
    """The number of the first line equal to `line` in `cat -n`-style output."""
    for row in _TAG.sub("", view).splitlines():
        number, tab, text = row.strip(" ").partition("\t")
        if tab and number.isdigit() and text == line:
            return int(number)
    return None


def _editor(command: str, path: str, **arguments) -> ToolCall:
    return ToolCall(EDITOR, {"command": command, "path": path, **arguments})


def _key(call: ToolCall) -> tuple[str, ...]:
    return (call.name, str(call.arguments.get("command")), str(call.arguments.get("path")))
