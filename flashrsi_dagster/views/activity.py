"""What a Worker did in its step, from its tool calls: the files it read, the commands it
ran, the files it edited or wrote, in order and counted.

Known tools: MiniAgent's `editor` (view, create, str_replace, insert), `shell` and
`read_skill`; Claude Code's Read, Write, Edit, MultiEdit, NotebookEdit, Bash, Glob, Grep and
LS. Any other tool, or a known one called with arguments it does not take, is listed as
such, with its arguments.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from flashrsi_dagster.records import Trajectory
from flashrsi_dagster.views.markup import code
from flashrsi_dagster.views.messages import ToolCall, tool_calls

Kind = Literal["read", "ran", "searched", "edited", "wrote", "other"]
DEFAULT_MAX_STEPS = 100
FILES_NAMED = 20
_EXIT_CODE = re.compile(r"Exit code: (-?\d+)")  # the first line of a MiniAgent shell result


@dataclass(frozen=True)
class Action:
    kind: Kind
    target: str
    """A path, a command, a search, or for another tool its arguments on one line."""
    tool: str
    outcome: str = ""
    """`failed`, `exit 2`, `no result`; empty when the call went through."""


def _editor(args: Mapping[str, Any]) -> tuple[Kind, Any] | None:
    kinds: dict[Any, Kind] = {
        "view": "read",
        "create": "wrote",
        "str_replace": "edited",
        "insert": "edited",
    }
    kind = kinds.get(args.get("command"))
    return (kind, args.get("path")) if kind else None


def _search(args: Mapping[str, Any]) -> tuple[Kind, Any] | None:
    pattern = args.get("pattern")
    if not isinstance(pattern, str):
        return None
    where = [f"in {args['path']}"] if isinstance(args.get("path"), str) else []
    where += [f"files {args['glob']}"] if isinstance(args.get("glob"), str) else []
    return "searched", " ".join([pattern, *where])


def _skill(args: Mapping[str, Any]) -> tuple[Kind, Any] | None:
    name = args.get("name")
    return ("read", f"skill {name}") if isinstance(name, str) else None


def _field(kind: Kind, key: str) -> Callable[[Mapping[str, Any]], tuple[Kind, Any]]:
    return lambda args: (kind, args.get(key))


_TOOLS: dict[str, Callable[[Mapping[str, Any]], tuple[Kind, Any] | None]] = {
    "editor": _editor,
    "shell": _field("ran", "command"),
    "read_skill": _skill,
    "Read": _field("read", "file_path"),
    "LS": _field("read", "path"),
    "Write": _field("wrote", "file_path"),
    "Edit": _field("edited", "file_path"),
    "MultiEdit": _field("edited", "file_path"),
    "NotebookEdit": _field("edited", "notebook_path"),
    "Bash": _field("ran", "command"),
    "Glob": _search,
    "Grep": _search,
}


def actions(trajectory: Trajectory) -> list[Action]:
    """The trajectory's tool calls as actions, in order; paths under the agent's working
    folder (Claude Code names it in its `init` event) are shown relative to it."""
    folder = _working_folder(trajectory.messages)
    return [_action(call, folder) for call in tool_calls(trajectory.messages)]


def _action(call: ToolCall, folder: str | None) -> Action:
    rule = _TOOLS.get(call.name)
    found = rule(call.arguments) if rule else None
    outcome = _outcome(call)
    if found is None or not isinstance(found[1], str):
        arguments = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
        return Action("other", arguments, call.name, outcome)
    kind, target = found
    if kind != "ran" and folder and target.startswith(folder + "/"):
        target = target[len(folder) + 1 :]
    return Action(kind, target, call.name, outcome)


def _outcome(call: ToolCall) -> str:
    if call.result is None:
        return "no result"
    if call.failed:
        return "failed"
    exit_code = _EXIT_CODE.match(call.result)
    return f"exit {exit_code[1]}" if exit_code and exit_code[1] != "0" else ""


def _working_folder(messages: Sequence[Mapping[str, Any]]) -> str | None:
    for message in messages:
        data = message.get("data")
        if message.get("subtype") == "init" and isinstance(data, dict):
            cwd = data.get("cwd")
            return cwd.rstrip("/") if isinstance(cwd, str) and cwd.strip("/") else None
    return None


@dataclass(frozen=True)
class _Label:
    verb: str
    """How a step of this kind reads: `ran <command>`."""
    noun: str
    """How the summary counts them, `s` added for more than one: `3 commands`."""
    heading: str


_LABELS: dict[Kind, _Label] = {
    "read": _Label("read", "read", "Read"),
    "ran": _Label("ran", "command", "Commands"),
    "searched": _Label("searched", "search", "Searches"),
    "edited": _Label("edited", "edit", "Edited"),
    "wrote": _Label("wrote", "write", "Wrote (created or replaced)"),
    "other": _Label("other tool", "other tool", "Other tools (not file or command tools)"),
}


def worker_activity_markdown(trajectory: Trajectory, *, max_steps: int = DEFAULT_MAX_STEPS) -> str:
    """A count of each kind of action, the files (and commands, searches, other tools) each
    touched with how often, then the steps in order: the middle ones left out, with a note,
    past `max_steps`."""
    done = actions(trajectory)
    if not done:
        return "The Worker made no tool call.\n"
    counts = Counter(action.kind for action in done)
    summary = " · ".join(
        f"{counts[kind]} {_LABELS[kind].noun}{'s' * (counts[kind] > 1)}"
        for kind in _LABELS
        if counts[kind]
    )
    failed = sum(1 for action in done if action.outcome)
    failed_note = f" ({failed} failed or without result)" if failed else ""
    lines = [f"**{len(done)} tool calls**: {summary}{failed_note}", ""]
    lines += [_touched(kind, done) for kind in _LABELS if counts[kind]]
    lines += ["", "**Steps**", *_steps(done, max_steps)]
    return "\n".join(lines) + "\n"


def _touched(kind: Kind, done: Sequence[Action]) -> str:
    """One line: each distinct target of `kind`, first seen first, with its count."""
    key = (lambda a: a.tool) if kind == "other" else (lambda a: a.target)
    seen = Counter(key(action) for action in done if action.kind == kind)
    named = [code(target, 120) + (f" x{n}" if n > 1 else "") for target, n in seen.items()]
    more = len(named) - FILES_NAMED
    listed = ", ".join(named[:FILES_NAMED]) + (f" and {more} more" if more > 0 else "")
    return f"- **{_LABELS[kind].heading}** ({len(seen)}): {listed}"


def _steps(done: Sequence[Action], max_steps: int) -> list[str]:
    lines = [_step(n, action) for n, action in enumerate(done, start=1)]
    if len(lines) <= max_steps:
        return lines
    head = max_steps // 2
    left_out = len(lines) - max_steps
    note = f"- … steps {head + 1} to {head + left_out} ({left_out}) left out: see the transcript"
    return [*lines[:head], note, *lines[len(lines) - (max_steps - head) :]]


def _step(number: int, action: Action) -> str:
    verb = _LABELS[action.kind].verb
    if action.kind == "other":
        what = (
            f"{code(action.tool, 80)} {code(action.target, 160)}"
            if action.target
            else code(action.tool, 80)
        )
    else:
        what = code(action.target, 160)
    outcome = f" — {action.outcome}" if action.outcome else ""
    return f"{number}. {verb} {what}{outcome}"
