"""The edit phase: the analysis's guidance written into the module's files, in the checkout.

The instruction lists the targets as `findings.Target.describe()` writes them: a heading
`## <file> (supported by ...)`, then each finding's `change:`, whose backquoted rule lines
(`- <label> when the text mentions: <keywords>`) are the guidance. Targets outside
`Module files:` are ignored.

1. `editor view` of every target file, in one reply.
2. The edits, in one reply, keywords a file already names left out:
   - a `.md` file (prompt, skill): as the Meta-Harness worker edits a prompt, an existing rule
     line of the label extended (`str_replace`), new rule lines appended (`insert`), or the
     file created;
   - a Python file: the module's recipe in its place (`places.py`), one `str_replace` of the
     place's whole text;
   - a JSON file (hooks): left alone, guidance is not a hook's business.
3. Once an edit is in the conversation: a summary of what changed and what did not, and why.
   With nothing to change, that summary is the first reply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flashrsi_dagster.offline_model.conversation import Conversation, Reply, ToolCall
from flashrsi_dagster.offline_model.policies.modular_rsi.instruction import Instruction
from flashrsi_dagster.offline_model.policies.modular_rsi.places import python_edit
from flashrsi_dagster.offline_model.policies.prompt_edits import Edit
from flashrsi_dagster.offline_model.policies.rules import Rule, parse_rule
from flashrsi_dagster.offline_model.policies.worker import (
    edit_calls,
    editor_call,
    file_lines,
    results_by_request,
)

_HEADING = re.compile(r"^## (?P<file>\S.*?) \(supported by ", re.MULTILINE)
_QUOTED = re.compile(r"`(?P<line>[^`\n]*when the text mentions:[^`\n]*)`", re.IGNORECASE)
_EDITS = ("create", "str_replace", "insert")


@dataclass(frozen=True)
class Plan:
    calls: tuple[ToolCall, ...]
    said: str
    """What the edits do, or why there are none."""


def targets(instruction: Instruction) -> dict[str, list[Rule]]:
    """The guidance per target file, in the instruction's order (module files only)."""
    found: dict[str, list[Rule]] = {}
    headings = list(_HEADING.finditer(instruction.text))
    for heading, following in zip(headings, [*headings[1:], None], strict=True):
        if heading["file"] not in instruction.files:
            continue
        block = instruction.text[heading.end() : following.start() if following else None]
        rules = [r for m in _QUOTED.finditer(block) if (r := parse_rule(m["line"]))]
        found.setdefault(heading["file"], []).extend(rules)
    return found


def edit(conversation: Conversation, instruction: Instruction) -> Reply:
    wanted = targets(instruction)
    if not wanted:
        return Reply(
            text=f"Simulator worker, {instruction.module}: the instruction names no "
            "target among the module's files; nothing was edited."
        )
    done = results_by_request(conversation)
    if unseen := [path for path in wanted if ("editor", "view", path) not in done]:
        return Reply(tool_calls=tuple(editor_call(command="view", path=p) for p in unseen))
    plans = {
        path: plan(path, done[("editor", "view", path)], rules, instruction.module)
        for path, rules in wanted.items()
    }
    edited = any(("editor", command, path) in done for command in _EDITS for path in wanted)
    calls = tuple(call for p in plans.values() for call in p.calls)
    if calls and not edited:
        return Reply(tool_calls=calls)
    lines = [f"- {path}: {p.said}" for path, p in plans.items()]
    failed = [
        result
        for key, result in done.items()
        if key[0] == "editor" and key[1] in _EDITS and result.startswith("Error")
    ]
    lines += [f"- an edit failed: {r}" for r in failed]
    verb = "changed" if calls and not failed else "changed nothing"
    return Reply(text=f"Simulator worker, {instruction.module}: {verb}.\n" + "\n".join(lines))


def plan(path: str, view: str, rules: list[Rule], module: str) -> Plan:
    lines = file_lines(view)
    if path.endswith(".json"):
        return Plan((), "left alone: guidance is not a hook's business")
    if path.endswith(".md"):
        edits = _markdown_edits(lines or [], rules)
        if not edits:
            return Plan((), "already names every keyword the guidance suggests")
        said = "; ".join(f"`{e.label}`: {', '.join(e.keywords)}" for e in edits)
        return Plan(edit_calls(edits, lines, path), f"guidance added ({said})")
    if lines is None:
        return Plan((), "does not exist, so it has no place to edit")
    change = python_edit(lines, module, rules)
    if isinstance(change, str):
        return Plan((), f"not edited: {change}")
    call = editor_call(command="str_replace", path=path, old_str=change.old, new_str=change.new)
    return Plan((call,), change.what)


def _markdown_edits(lines: list[str], rules: list[Rule]) -> list[Edit]:
    first: dict[str, Rule] = {}
    known: dict[str, set[str]] = {}
    for rule in filter(None, map(parse_rule, lines)):
        first.setdefault(rule.label.lower(), rule)
        known.setdefault(rule.label.lower(), set()).update(rule.keywords)
    words: dict[str, list[str]] = {}
    spelling: dict[str, str] = {}
    for rule in rules:
        key = rule.label.lower()
        spelling.setdefault(key, rule.label)
        fresh = [k for k in rule.keywords if k not in known.get(key, set())]
        words.setdefault(key, []).extend(k for k in fresh if k not in words.get(key, []))
    return [
        Edit(spelling[key], tuple(found), first.get(key)) for key, found in words.items() if found
    ]
