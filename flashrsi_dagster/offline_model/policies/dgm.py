"""`simulator/dgm`: the demo DGM agent improving itself. It runs as the parent's harness (its
system prompt is the parent's own), on a copy of that harness, and decides every reply from
the conversation: the instruction's markers (`algorithms/dgm/markers.py`), its own system
prompt, and what its tool calls return. Stateless and deterministic. With the MiniAgent
`editor` and `shell` tools:

- `Entry: streamline_tools`: `editor view tools/editor.py`; if its `_COMMANDS = {...}` line
  offers `str_replace`, one `str_replace` of that line without it ("view, create and insert
  suffice"): the kind of self-simplification that costs an agent its editing ability.
- `Entry: improve_workflow`: unless its own system prompt already holds the workflow line
  (`markers.WORKFLOW_LINE`), `editor view` of the prompt file, then one `create` of it
  rewritten for the new workflow: the rule lines dropped (patched from single failures, they
  are to be derived again from every failure), the workflow line added at the end. A
  rewrite that scores lower now and enables a better child: a stepping stone.
- Any other entry is a failed train task id. With the workflow line in its own system prompt
  it reads every log (`find <logs> ...`, then `cat` of each) and adds up to 3 keywords per
  failing label from all failures (`prompt_edits.plan_edits`); without it, it reads only the
  entry's log and adds the one best keyword of that failure. Then `editor view` of the prompt
  file and the edits (`str_replace` of a rule line, `insert` of new ones).
- Once its edits have results, a final text. An editing check is answered by
  `editing_check.py` (the registry wraps this policy).
"""

from __future__ import annotations

import shlex

from flashrsi_dagster import instruction_markers
from flashrsi_dagster.algorithms.dgm import markers as m
from flashrsi_dagster.offline_model.conversation import Conversation, Reply
from flashrsi_dagster.offline_model.policies.markers import marker, marker_value, safe_path
from flashrsi_dagster.offline_model.policies.prompt_edits import Edit, plan_edits, summary
from flashrsi_dagster.offline_model.policies.rules import parse_rule
from flashrsi_dagster.offline_model.policies.worker import (
    cat_command,
    edit_calls,
    editor_call,
    failure_in,
    file_lines,
    find_command,
    listed_files,
    results_by_request,
    shell_call,
)

EDITOR_FILE = "tools/editor.py"
_LOGS, _ENTRY = marker(m.LOGS), marker(m.ENTRY)
_PROMPT = marker(instruction_markers.PROMPT_FILE)
_EDITS = ("create", "str_replace", "insert")


def improve(conversation: Conversation) -> Reply:
    instruction = (conversation.user_texts() or [""])[0]
    logs = marker_value(_LOGS, instruction) or ".history"
    prompt = marker_value(_PROMPT, instruction) or "prompts/system.md"
    entry = marker_value(_ENTRY, instruction)
    if not entry or not all(map(safe_path, (logs, prompt))):
        return Reply(text="Simulator DGM: no entry, or a path outside the folder; nothing edited.")
    if "editor" not in conversation.tool_names():
        return Reply(text="Simulator DGM: this harness offers no `editor` tool; nothing edited.")
    done = results_by_request(conversation)
    if entry == m.STREAMLINE_TOOLS:
        return _streamline(done)
    if entry == m.IMPROVE_WORKFLOW:
        return _workflow(done, prompt, m.WORKFLOW_LINE in conversation.system)
    return _from_logs(done, logs, prompt, entry, m.WORKFLOW_LINE in conversation.system)


def _edited(done: dict, path: str) -> bool:
    return any(("editor", command, path) in done for command in _EDITS)


def _streamline(done: dict) -> Reply:
    view = done.get(("editor", "view", EDITOR_FILE))
    if view is None:
        return Reply(tool_calls=(editor_call(command="view", path=EDITOR_FILE),))
    line = next((x for x in file_lines(view) or [] if x.startswith("_COMMANDS = {")), None)
    entry = '"str_replace": _str_replace, '
    if line is None or entry not in line:
        return Reply(text="Simulator DGM: the editor is already as small as it gets.")
    if _edited(done, EDITOR_FILE):
        return Reply(
            text="Simulator DGM: streamlined the editor (view, create and insert suffice)."
        )
    call = editor_call(
        command="str_replace", path=EDITOR_FILE, old_str=line, new_str=line.replace(entry, "")
    )
    return Reply(tool_calls=(call,))


def _workflow(done: dict, prompt: str, has_line: bool) -> Reply:
    if has_line:
        return Reply(text="Simulator DGM: my workflow already reads every failure; nothing edited.")
    view = done.get(("editor", "view", prompt))
    if view is None:
        return Reply(tool_calls=(editor_call(command="view", path=prompt),))
    if _edited(done, prompt):
        return Reply(
            text=f"Simulator DGM: rewrote {prompt} for my new workflow: rules patched from "
            "single failures dropped, to be derived again from every failure."
        )
    kept = [line for line in file_lines(view) or [] if parse_rule(line) is None]
    text = "".join(line + "\n" for line in [*kept, m.WORKFLOW_LINE])
    return Reply(tool_calls=(editor_call(command="create", path=prompt, file_text=text),))


def _from_logs(done: dict, logs: str, prompt: str, entry: str, every: bool) -> Reply:
    if every:
        listing = done.get(("shell", find_command(logs)))
        if listing is None:
            return Reply(tool_calls=(shell_call(find_command(logs)),))
        files = listed_files(listing, logs)
    else:
        files = [f"{logs.rstrip('/')}/{m.log_name(entry)}.json"]
    if unread := [f for f in files if ("shell", cat_command(f)) not in done]:
        return Reply(tool_calls=tuple(shell_call(cat_command(f)) for f in unread))
    failures = [f for path in files if (f := failure_in(done[("shell", cat_command(path))]))]
    if not failures:
        return Reply(text=f"Simulator DGM: no failure in {shlex.quote(logs)} to learn from.")
    view = done.get(("editor", "view", prompt))
    if view is None:
        return Reply(tool_calls=(editor_call(command="view", path=prompt),))
    lines = file_lines(view)
    edits = plan_edits(lines or [], failures)
    if not every:  # one failure read: the single most telling word, a cautious patch
        edits = [Edit(e.label, e.keywords[:1], e.rule) for e in edits]
    if not edits:
        return Reply(text=f"Simulator DGM: {prompt} already has what the failures suggest.")
    if _edited(done, prompt):
        return Reply(text=summary(edits, prompt, len(failures), who="Simulator DGM"))
    return Reply(tool_calls=edit_calls(edits, lines, prompt))
