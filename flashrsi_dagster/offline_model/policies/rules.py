"""The harness text both demo policies read: classification rules, the task, skill lists.

Rule line:      `- <label> when the text mentions: <kw1>, <kw2>, ...`
                (the `-`/`*` bullet is optional, matching is case-insensitive, the label may be
                backquoted; keywords are compared lower-cased)
Default line:   `Default label: <label>`
Task message:   an optional `Labels: a, b, c` line (the allowed labels) and an optional `Text:`
                line; what follows `Text:` is the text to classify (else the whole message).
                The text classification benchmark writes them (`instruction_markers`).
Skill list:     lines `- <name>: <description>` under a line containing the word "Skills".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flashrsi_dagster import instruction_markers as markers

_RULE = re.compile(
    r"^\s*(?:[-*]\s*)?`?(?P<label>\w[\w .-]*?)`?\s+when the text mentions:\s*(?P<keywords>.*)$",
    re.IGNORECASE,
)
_DEFAULT = re.compile(r"^\s*(?:[-*]\s*)?Default label:\s*`?(?P<label>[^`]+?)`?\s*\.?\s*$", re.I)
_LABELS = re.compile(rf"^\s*{re.escape(markers.LABELS)}\s*(?P<labels>.*)$", re.IGNORECASE)
_TEXT = re.compile(rf"^\s*{re.escape(markers.TEXT)}[ \t]*", re.IGNORECASE | re.MULTILINE)
_SKILLS_HEADING = re.compile(r"\bSkills\b")
_SKILL = re.compile(r"^\s*[-*]\s*`?(?P<name>[\w.-]+)`?\s*:\s*(?P<description>.*)$")


@dataclass(frozen=True)
class Rule:
    label: str
    keywords: tuple[str, ...]
    line: str
    """The line as written, so an editor can replace it exactly."""


def parse_rule(line: str) -> Rule | None:
    match = _RULE.match(line)
    if not match:
        return None
    return Rule(match["label"].strip(), _split_list(match["keywords"], lower=True), line)


def parse_rules(text: str) -> list[Rule]:
    return [rule for line in text.splitlines() if (rule := parse_rule(line))]


def default_label(text: str) -> str | None:
    for line in text.splitlines():
        if match := _DEFAULT.match(line):
            return match["label"].strip()
    return None


def task(message: str) -> tuple[str, list[str]]:
    """The text to classify and the allowed labels (empty when the message names none)."""
    labels: list[str] = []
    kept: list[str] = []
    for line in message.splitlines():
        if match := _LABELS.match(line):
            labels = list(_split_list(match["labels"], lower=False))
        else:
            kept.append(line)
    body = "\n".join(kept)
    start = _TEXT.search(body)
    return (body[start.end() :] if start else body).strip(), labels


def listed_skills(text: str) -> list[str]:
    """Skill names listed under a line that mentions Skills, in order.

    Prose may sit between that line and the list (MiniAgent puts a sentence there); the list
    ends at the first other line after it, and a Markdown heading ends the search.
    """
    names: list[str] = []
    state = None  # None: outside; "heading": after a Skills line; "items": in its list
    for line in text.splitlines():
        item = _SKILL.match(line)
        if state and item:
            names.append(item["name"])
            state = "items"
        elif _SKILLS_HEADING.search(line) and not item:
            state = "heading"
        elif not line.strip() or (state == "heading" and not line.lstrip().startswith("#")):
            continue
        else:
            state = None
    return list(dict.fromkeys(names))


def _split_list(text: str, *, lower: bool) -> tuple[str, ...]:
    items = (item.strip().strip("`\"'").rstrip(".").strip() for item in text.split(","))
    return tuple(item.lower() if lower else item for item in items if item)
