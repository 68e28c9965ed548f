"""Where a module lives in a Python file, and what the simulated Worker writes there.

A module's *place* is a function whose docstring opens with the module's name in words
(`context_management` -> a docstring `Context management: ...`), found by parsing the file (never
importing it). MiniAgent's runtime gives each of the five runtime modules one or more.

Given the analysis's guidance (rule lines `- <label> when the text mentions: <keywords>`, the
target's classification hints), the Worker asks how its module's place can make the model see
them, and writes that (`RECIPES`), one statement holding every rule with a keyword the file
does not yet name:

| module | the place's | statement, and what the model then sees |
|---|---|---|
| context_management | parameter `system` | `system += "<rules>"` first: the system prompt |
| observation_management | parameter `output` | `output += "<rules>"` first: every tool result |
| agent_loop | parameter `params` | the rules added to `params["instruction"]`: the task |
| tool_use | last `return output` | `output += "<rules>"` before it: every tool's output |

Task completion detection runs after the model has answered, so no guidance can reach the
model from there: its recipe (`NORMALISE`) makes the final answer a bare label instead (the
reply's first line, without a `Label:`-style lead-in, quotes or trailing punctuation), once.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from flashrsi_dagster.offline_model.policies.rules import Rule

_KNOWN_RULE = re.compile(
    r"-\s*`?(?P<label>\w[\w.-]*)`?\s+when the text mentions:\s*(?P<keywords>[^\"'\\\n]*)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Recipe:
    mode: Literal["prefix", "suffix"]
    """`prefix`: right after the docstring, `variable` a parameter; `suffix`: right before a
    last statement `return <variable>`."""
    variable: str
    statement: str
    """Python with `{text}`, the rules as a string literal."""


RECIPES = {
    "context_management": Recipe("prefix", "system", "system += {text}"),
    "observation_management": Recipe("prefix", "output", "output += {text}"),
    "agent_loop": Recipe(
        "prefix", "params", 'params = {{**params, "instruction": params["instruction"] + {text}}}'
    ),
    "tool_use": Recipe("suffix", "output", "output += {text}"),
}
NORMALISED = "# The answer is the reply's first line, without a lead-in such as `Label:`"
NORMALISE = (
    NORMALISED,
    "# and without quotes or trailing punctuation around it.",
    "if not reply.tool_calls and reply.text.strip():",
    "    answer = reply.text.strip().splitlines()[0].strip()",
    '    for lead in ("final answer:", "answer:", "label:"):',
    "        if answer.lower().startswith(lead):",
    "            answer = answer[len(lead) :].strip()",
    '    return answer.strip("\\"\'`*").rstrip(".!").strip() or reply.text',
)
"""Task completion detection's statements (a `reply` parameter)."""


@dataclass(frozen=True)
class Place:
    name: str
    first: int
    """0-based index of the `def` line."""
    last: int
    """0-based index of the function's last line."""
    body: int
    """0-based index of the first line after the docstring."""
    returns: int | None
    """0-based index of a last statement `return <name>`, with that name in `returned`."""
    returned: str | None
    indent: str
    parameters: tuple[str, ...]


@dataclass(frozen=True)
class PythonEdit:
    old: str
    """The place's whole text, as it is (unique in the file: it holds the `def` line)."""
    new: str
    what: str
    """One line for the summary."""


def title(module: str) -> str:
    return module.replace("_", " ")


def find_places(lines: Sequence[str], module: str) -> list[Place]:
    """The module's places in the file, in file order; none when it does not parse."""
    try:
        tree = ast.parse("\n".join(lines) + "\n")
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        doc = ast.get_docstring(node)
        if not doc or doc.split(":", 1)[0].strip().lower() != title(module).lower():
            continue
        last = node.body[-1]
        returned = (
            last.value.id
            if isinstance(last, ast.Return) and isinstance(last.value, ast.Name)
            else None
        )
        arguments = node.args
        names = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
        found.append(
            Place(
                name=node.name,
                first=node.lineno - 1,
                last=node.end_lineno - 1,
                body=node.body[0].end_lineno,
                returns=last.lineno - 1 if returned else None,
                returned=returned,
                indent=" " * node.body[0].col_offset,
                parameters=tuple(names),
            )
        )
    return sorted(found, key=lambda place: place.first)


def known_keywords(text: str) -> dict[str, set[str]]:
    """Keywords the file's rule lines already name, by lower-cased label (rules written in
    code as string literals count too)."""
    known: dict[str, set[str]] = {}
    for match in _KNOWN_RULE.finditer(text):
        words = {w.strip().strip("`").rstrip(".").lower() for w in match["keywords"].split(",")}
        known.setdefault(match["label"].lower(), set()).update(w for w in words if w)
    return known


def new_rules(rules: Sequence[Rule], known: dict[str, set[str]]) -> list[Rule]:
    """Each rule without the keywords `known` already has; rules left empty are dropped."""
    kept = []
    for rule in rules:
        fresh = tuple(k for k in rule.keywords if k not in known.get(rule.label.lower(), set()))
        if fresh:
            line = f"- {rule.label} when the text mentions: {', '.join(fresh)}"
            kept.append(Rule(rule.label, fresh, line))
    return kept


def python_edit(lines: Sequence[str], module: str, rules: Sequence[Rule]) -> PythonEdit | str:
    """The module's edit of a Python file, or why there is none."""
    places = find_places(lines, module)
    if not places:
        return (
            f"it has no place for {module} (a function whose docstring opens with "
            f"{title(module).capitalize()!r})"
        )
    if module == "task_completion_detection":
        return _normalise(lines, places)
    recipe = RECIPES.get(module)
    if recipe is None:
        return f"the simulator has no recipe for module {module!r}"
    fresh = new_rules(rules, known_keywords("\n".join(lines)))
    if not fresh:
        return "it already names every keyword the guidance suggests"
    text = json.dumps("\n" + "\n".join(rule.line for rule in fresh))
    for place in places:
        if recipe.mode == "prefix" and recipe.variable in place.parameters:
            at = place.body
        elif recipe.mode == "suffix" and place.returned == recipe.variable:
            at = place.returns
        else:
            continue
        statement = place.indent + recipe.statement.format(text=text)
        rules_said = "; ".join(f"`{rule.line}`" for rule in fresh)
        return insert_lines(lines, place, at, [statement], f"`{place.name}` now adds {rules_said}")
    where = "a parameter" if recipe.mode == "prefix" else "returned last"
    return f"none of its {module} places has `{recipe.variable}` {where}"


def _normalise(lines: Sequence[str], places: list[Place]) -> PythonEdit | str:
    for place in places:
        if "reply" not in place.parameters:
            continue
        if any(NORMALISED in line for line in lines[place.first : place.last + 1]):
            return f"`{place.name}` already makes the final answer a bare label"
        block = [place.indent + line for line in NORMALISE]
        what = (
            f"`{place.name}` now makes the final answer a bare label (its first line, without "
            "a `Label:`-style lead-in, quotes or trailing punctuation)"
        )
        return insert_lines(lines, place, place.body, block, what)
    return "none of its task_completion_detection places takes the model's `reply`"


def insert_lines(
    lines: Sequence[str], place: Place, at: int, added: list[str], what: str
) -> PythonEdit:
    """`added` inserted before line `at` (0-based, in the file) of the place, as a replacement
    of the place's whole text."""
    old = list(lines[place.first : place.last + 1])
    offset = at - place.first
    new = [*old[:offset], *added, *old[offset:]]
    return PythonEdit("\n".join(old), "\n".join(new), what)
