"""`simulator/target`: the demo target, a text classifier whose answer follows its harness.

Contract (same conversation, same answer):

1. Harness text = the system prompt (chat: system/developer messages; Responses: `instructions`
   and system items; Anthropic: `system`), every user message before the task (where a harness
   puts its instructions file: the Codex CLI sends AGENTS.md so) and every tool result already
   in the conversation.
2. Skills: when the request offers a tool named `read_skill` and the system prompt lists skills
   (lines `- <name>: <description>` under a line containing "Skills"), every listed skill not yet
   read in this conversation (no earlier `read_skill` call with that `name`) is requested first,
   all in one reply of `read_skill` calls with arguments `{"name": <skill>}`. The skill bodies
   come back as tool results and so join the harness text.
3. Rules in the harness text: `- <label> when the text mentions: <kw1>, <kw2>, ...`, and an
   optional `Default label: <label>`. Rules for the same label pool their keywords.
4. The task is the last user message: the text after its `Text:` line (or the whole message),
   and the allowed labels from a `Labels: a, b, c` line; when labels are given, rules and the
   default for other labels are ignored.
5. Answer: the label whose keywords occur most often in the text (case-insensitive substring
   counts; ties go to the label whose rule comes first); with no keyword found, the default
   label, else the first allowed label, else `unknown`. The reply is the bare label.
"""

from __future__ import annotations

from flashrsi_dagster.offline_model.conversation import Conversation, Reply, ToolCall
from flashrsi_dagster.offline_model.policies.rules import (
    Rule,
    default_label,
    listed_skills,
    parse_rules,
    task,
)

READ_SKILL = "read_skill"


def classify(conversation: Conversation) -> Reply:
    if unread := unread_skills(conversation):
        return Reply(tool_calls=tuple(ToolCall(READ_SKILL, {"name": name}) for name in unread))
    earlier = conversation.user_texts()[:-1]
    harness = "\n".join([conversation.system, *earlier, *conversation.tool_results()])
    text, labels = task(conversation.last_user_text())
    return Reply(text=choose_label(text, parse_rules(harness), default_label(harness), labels))


def unread_skills(conversation: Conversation) -> list[str]:
    if READ_SKILL not in conversation.tool_names():
        return []
    read = {
        str(call.arguments.get("name"))
        for call in conversation.tool_calls()
        if call.name == READ_SKILL
    }
    return [name for name in listed_skills(conversation.system) if name not in read]


def choose_label(text: str, rules: list[Rule], default: str | None, labels: list[str]) -> str:
    allowed = {label.lower(): label for label in labels}
    keywords: dict[str, list[str]] = {}  # label -> keywords, in order of first rule
    spelling: dict[str, str] = {}
    for rule in rules:
        key = rule.label.lower()
        if allowed and key not in allowed:
            continue
        spelling.setdefault(key, allowed.get(key, rule.label))
        keywords.setdefault(key, []).extend(rule.keywords)
    haystack = text.lower()
    hits = {key: sum(haystack.count(word) for word in words) for key, words in keywords.items()}
    best = max(hits, key=hits.__getitem__, default=None)  # max keeps the first of equals
    if best is not None and hits[best] > 0:
        return spelling[best]
    if default and (not allowed or default.lower() in allowed):
        return allowed.get(default.lower(), default)
    return labels[0] if labels else "unknown"
