"""`simulator/worker`: the demo Worker, improving a classification prompt from its history.

Stateless and deterministic: every reply is decided from the conversation so far, through the
MiniAgent tools `shell` (`{"command": str}`) and `editor` (`{"command": "view" | "create" |
"str_replace" | "insert", "path", ...}`). Contract:

- The user message names the history folder in a line `History: <relative path>` (default
  `.history`) and the file to improve in `Prompt file: <relative path>` (default
  `prompts/system.md`), as the Meta-Harness Worker instruction does (`instruction_markers`).
  Absolute paths and `..` are refused: it never looks outside the working directory.
- (a) `shell`: `find <history> -type f -name '*.json' | sort`.
- (b) `shell`: `cat <file>` for every listed file (at most 50), all in one reply.
- Failures are records with `"kind": "trajectory"`, `score` < 1 or `status` != `success`, a
  `metadata.expected` label, and a first user message (text after `Text:` if present). With no
  failure it replies that there is nothing to improve, and edits nothing.
- (c) `editor view` of the prompt file; its output is read as `cat -n` lines (`<n>\t<line>`),
  as "does not exist" / "is empty", or else as the raw file.
- (d) Per failing label (alphabetical), up to 3 keywords: lower-cased letter-only words of 4+
  letters, not stopwords, not yet keywords of that label, ranked by how many failing texts of
  the label contain them (ties alphabetical). A label with a rule line gets a `str_replace`
  extending that line; new rule lines `- <label> when the text mentions: <keywords>` are added
  in one `insert` after the last line (or one `create` when the file does not exist).
- (e) Once the edits are in the conversation, a final text summarising them; when the
  instruction asks for a report (a line starting `Hypothesis:`, `meta_harness/markers.py`), it
  ends with the report's `Hypothesis:` and `Axis of change:` lines.
- Coordinated (`Candidate folders: c0 c1 …` in the instruction, `proposer: coordinated`): the
  prompt file of each folder is viewed, then edited, the i-th folder's edits passing over each
  label's i best-ranked keywords (as best-of-N's sampling Worker, one per candidate); the final
  text has a `Candidate <folder>:` section per folder, each with its report lines.

Running as an adopted improver (`worker.harness: adopted`; the instruction has an
`Improver harness:` line), it also adds the workflow line `instruction_markers.BATCH_READING`
to the prompt file with its edits, once. Running a harness whose system prompt holds that line,
(b) is one `shell` call per 4 files, `tail -n +1 -- <file> <file> …`, whose `==> <file> <==`
headers split the output back into files: the adopted harness works differently from the
seed's (seed 003).

Codex's tools instead: when the request offers `apply_patch` and no `editor` (the Codex core),
(c) is `shell` `cat -n <prompt file>` and (d) one `apply_patch` call (`{"input": <patch>}`)
holding the same edits: `Add File` for a missing file, else one `Update File` whose hunks
replace the rule lines and add the new ones at the end of the file.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import PurePosixPath
from typing import Any

from flashrsi_dagster import instruction_markers as markers
from flashrsi_dagster.algorithms.meta_harness import markers as meta_harness_markers
from flashrsi_dagster.offline_model.conversation import (
    Conversation,
    Reply,
    ToolCall,
    text_of,
)
from flashrsi_dagster.offline_model.policies.markers import safe_path
from flashrsi_dagster.offline_model.policies.prompt_edits import (
    Edit,
    Failure,
    plan_edits,
    summary,
)
from flashrsi_dagster.offline_model.policies.rules import task

DEFAULT_HISTORY = ".history"
DEFAULT_PROMPT = "prompts/system.md"
MAX_FILES = 50
BATCH = 4
"""Files one batched read shows: a few trajectories stay under the harness's output limit."""

_HISTORY = re.compile(
    rf"^\s*{re.escape(meta_harness_markers.HISTORY)}\s*`?(?P<path>[^`\s]+)`?\s*$",
    re.I | re.MULTILINE,
)
_PROMPT = re.compile(
    rf"^\s*{re.escape(markers.PROMPT_FILE)}\s*`?(?P<path>[^`\s]+)`?\s*$", re.I | re.MULTILINE
)
_CANDIDATES = re.compile(
    rf"{re.escape(meta_harness_markers.CANDIDATES)}\s*(?P<folders>[^\n]+)$", re.I | re.MULTILINE
)
_NUMBERED = re.compile(r"^\s*(?P<number>\d+)\t(?P<line>.*)$")
_MISSING = re.compile(r"does not exist|no such file|not found", re.IGNORECASE)
_EMPTY = re.compile(r"\bis empty\.?\s*$", re.IGNORECASE)
_TAG = re.compile(r"</?\w+>")  # output wrappers such as <output>…</output>
_EDITS = ("create", "str_replace", "insert")
_HEADER = re.compile(r"^==> (.+?) <==$", re.MULTILINE)
WORKFLOW = Edit("workflow", (), None, literal=markers.BATCH_READING)
PATCH = "apply_patch"


def improve(conversation: Conversation, *, skip: int = 0) -> Reply:
    """The next reply (see the module doc); `skip`: the best-ranked keywords of each label
    to pass over, as best-of-N's sampling Worker does (`policies/sampling.py`)."""
    paths = _assignment(conversation)
    if isinstance(paths, str):
        return Reply(text=paths)
    history, prompt = paths
    done = results_by_request(conversation)
    listing = done.get(("shell", find_command(history)))
    if listing is None:
        return Reply(tool_calls=(shell_call(find_command(history)),))
    files = listed_files(listing, history)
    contents = _read_files(conversation, files, done)
    if isinstance(contents, Reply):
        return contents
    failures = [f for path in files if (f := failure_in(contents.get(path, "")))]
    if not failures:
        return Reply(
            text=f"Simulator worker: no failed trajectories in {history}; nothing to "
            "improve, so nothing was edited."
        )
    folders = _candidate_folders(conversation)
    if folders:
        return _coordinated(conversation, done, failures, [f"{f}/{prompt}" for f in folders])
    patching = _patching(conversation)
    view_call = _view_call(prompt, patching)
    view = done.get(_request_key(view_call))
    if view is None:
        return Reply(tool_calls=(view_call,))
    lines = file_lines(view)
    edits = plan_edits(lines or [], failures, skip)
    if edits and _improving_itself(conversation) and markers.BATCH_READING not in (lines or []):
        edits.append(WORKFLOW)
    if not edits:
        return Reply(
            text=f"Simulator worker: {prompt} already has every keyword the "
            f"{len(failures)} failed trajectories suggest; nothing was edited."
        )
    edited = (PATCH,) in done if patching else any(("editor", c, prompt) in done for c in _EDITS)
    if edited:
        return Reply(text=summary(edits, prompt, len(failures)) + _report(conversation))
    if patching:
        return Reply(tool_calls=(ToolCall(PATCH, {"input": patch_text(edits, lines, prompt)}),))
    return Reply(tool_calls=edit_calls(edits, lines, prompt))


def _view_call(prompt: str, patching: bool) -> ToolCall:
    if patching:
        return shell_call(view_command(prompt))
    return editor_call(command="view", path=prompt)


def _candidate_folders(conversation: Conversation) -> list[str]:
    """The folders of a coordinated round (`Candidate folders:`), unsafe ones left out."""
    match = _CANDIDATES.search("\n".join(conversation.user_texts()))
    return [f for f in match["folders"].split() if safe_path(f)] if match else []


def _coordinated(
    conversation: Conversation, done: dict[tuple[str, ...], str], failures: list, targets: list
) -> Reply:
    """One candidate per folder (the prompt file in each), the i-th passing over each
    label's i best-ranked keywords: the session's candidates differ by construction."""
    patching = _patching(conversation)
    views = [_view_call(target, patching) for target in targets]
    if unread := [call for call in views if _request_key(call) not in done]:
        return Reply(tool_calls=tuple(unread))
    plans = []
    for i, (target, view) in enumerate(zip(targets, views, strict=True)):
        lines = file_lines(done[_request_key(view)])
        plans.append((target, lines, plan_edits(lines or [], failures, i)))
    edited = (PATCH,) in done or any(("editor", c, t) in done for t in targets for c in _EDITS)
    if edited:
        sections = [
            f"Candidate {target.split('/', 1)[0]}:\n"
            + (summary(edits, target, len(failures)) if edits else "nothing left to add.")
            + _report(conversation)
            for target, _, edits in plans
        ]
        return Reply(text="\n".join(sections))
    calls = [
        call
        for target, lines, edits in plans
        if edits
        for call in (
            (ToolCall(PATCH, {"input": patch_text(edits, lines, target)}),)
            if patching
            else edit_calls(edits, lines, target)
        )
    ]
    if not calls:
        return Reply(text="Simulator worker: every folder already has every keyword.")
    return Reply(tool_calls=tuple(calls))


def _read_files(
    conversation: Conversation, files: list[str], done: dict[tuple[str, ...], str]
) -> dict[str, str] | Reply:
    """Every listed file's text by path, or the call that reads them: one `cat` each, or one
    `tail` for all when the harness's own prompt says to read them in one command."""
    if markers.BATCH_READING in conversation.system and files:
        commands = [batch_command(files[i : i + BATCH]) for i in range(0, len(files), BATCH)]
        if unread := [command for command in commands if ("shell", command) not in done]:
            return Reply(tool_calls=tuple(shell_call(command) for command in unread))
        return {p: text for c in commands for p, text in split_batch(done[("shell", c)]).items()}
    if unread := [path for path in files if ("shell", cat_command(path)) not in done]:
        return Reply(tool_calls=tuple(shell_call(cat_command(path)) for path in unread))
    return {path: done[("shell", cat_command(path))] for path in files}


def batch_command(files: list[str]) -> str:
    return "tail -n +1 -- " + " ".join(shlex.quote(path) for path in files)


def split_batch(output: str) -> dict[str, str]:
    """`tail`'s output of several files, by file (its `==> <file> <==` headers)."""
    parts = _HEADER.split(_TAG.sub("", output))
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _report(conversation: Conversation) -> str:
    """The report lines a Meta-Harness instruction asks the final message to end with."""
    asked = any(
        line.startswith(meta_harness_markers.HYPOTHESIS)
        for text in conversation.user_texts()
        for line in text.splitlines()
    )
    if not asked:
        return ""
    return (
        f"\n{meta_harness_markers.HYPOTHESIS} rules naming the words of the failing texts "
        f"lead the target to their labels.\n{meta_harness_markers.AXIS} prompt (keyword rules)"
    )


def _improving_itself(conversation: Conversation) -> bool:
    return any(
        line.strip().startswith(markers.IMPROVER)
        for text in conversation.user_texts()
        for line in text.splitlines()
    )


def _patching(conversation: Conversation) -> bool:
    tools = conversation.tool_names()
    return PATCH in tools and "editor" not in tools


def _request_key(call: ToolCall) -> tuple[str, ...]:
    if call.name == "shell":
        return ("shell", str(call.arguments.get("command")))
    return ("editor", str(call.arguments.get("command")), str(call.arguments.get("path")))


def view_command(path: str) -> str:
    return f"cat -n {shlex.quote(path)}"


def patch_text(edits: list[Edit], lines: list[str] | None, prompt: str) -> str:
    """The edits as one Codex patch (see the module doc): rule lines replaced in file order
    (a patch's hunks apply top to bottom), new rule lines after the file's last line."""
    if lines is None:
        body = [f"*** Add File: {prompt}", *(f"+{edit.new_line}" for edit in edits)]
        return "\n".join(["*** Begin Patch", *body, "*** End Patch"])
    replaced = {edit.rule.line: edit.new_line for edit in edits if edit.rule is not None}
    body = [f"*** Update File: {prompt}"]
    for line in lines:
        if line in replaced:
            body += ["@@", f"-{line}", f"+{replaced[line]}"]
    if added := [edit.new_line for edit in edits if edit.rule is None]:
        tail = [f" {replaced.get(lines[-1], lines[-1])}"] if lines else []
        body += ["@@", *tail, *(f"+{line}" for line in added), "*** End of File"]
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


def _assignment(conversation: Conversation) -> tuple[str, str] | str:
    """(history folder, prompt file) from the user message, or the reason to refuse."""
    text = "\n".join(conversation.user_texts())
    paths = []
    for pattern, default in ((_HISTORY, DEFAULT_HISTORY), (_PROMPT, DEFAULT_PROMPT)):
        match = pattern.search(text)
        path = PurePosixPath(match["path"] if match else default)
        if not safe_path(str(path)):
            return (
                f"Simulator worker: refusing {str(path)!r}: it only works with relative "
                "paths inside its working directory."
            )
        paths.append(str(path))
    return paths[0], paths[1]


def results_by_request(conversation: Conversation) -> dict[tuple[str, ...], str]:
    """Results of earlier tool calls by what was asked: ("shell", command) or
    ("editor", command, path)."""
    done = {}
    for call, result in conversation.exchanges():
        if result is None:
            continue
        if call.name == "shell":
            done[("shell", str(call.arguments.get("command")))] = result
        elif call.name == "editor":
            path = str(PurePosixPath(str(call.arguments.get("path"))))
            done[("editor", str(call.arguments.get("command")), path)] = result
        elif call.name == PATCH:
            done[(PATCH,)] = result
    return done


def find_command(history: str) -> str:
    return f"find {shlex.quote(history)} -type f -name '*.json' | sort"


def cat_command(path: str) -> str:
    return f"cat {shlex.quote(path)}"


def listed_files(listing: str, history: str) -> list[str]:
    prefix = "" if history == "." else history.rstrip("/") + "/"
    found = []
    for raw in listing.splitlines():
        path = _TAG.sub("", raw).strip()
        inside = not PurePosixPath(path).is_absolute() and ".." not in PurePosixPath(path).parts
        if inside and path.endswith(".json") and path.startswith(prefix):
            found.append(path)
    return sorted(set(found))[:MAX_FILES]


def failure_in(output: str) -> Failure | None:
    record = json_object(output)
    if record is None or record.get("kind") != "trajectory":
        return None
    score, status = record.get("score"), record.get("status")
    scored_low = isinstance(score, int | float) and not isinstance(score, bool) and score < 1
    metadata = record.get("metadata")
    expected = metadata.get("expected") if isinstance(metadata, dict) else None
    text = _first_user_text(record.get("messages"))
    if not (scored_low or status != "success") or not isinstance(expected, str) or not text:
        return None
    return Failure(expected.strip(), task(text)[0])


def json_object(output: str) -> dict[str, Any] | None:
    """The JSON object in a tool output, tolerating wrappers around it."""
    start, end = output.find("{"), output.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        value = json.loads(output[start : end + 1])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _first_user_text(messages: Any) -> str:
    for message in messages if isinstance(messages, list) else ():
        if isinstance(message, dict) and message.get("role") == "user":
            return text_of(message.get("content"))
    return ""


def file_lines(view: str) -> list[str] | None:
    """The file's lines from `editor view` output; None when the file does not exist."""
    numbered = [m for line in view.splitlines() if (m := _NUMBERED.match(line))]
    if numbered:
        lines = [""] * max(int(m["number"]) for m in numbered)
        for match in numbered:
            lines[int(match["number"]) - 1] = match["line"]
        return lines
    if _MISSING.search(view):
        return None
    return [] if _EMPTY.search(view) else view.splitlines()


def edit_calls(edits: list[Edit], lines: list[str] | None, prompt: str) -> tuple[ToolCall, ...]:
    if lines is None:
        text = "".join(edit.new_line + "\n" for edit in edits)
        return (editor_call(command="create", path=prompt, file_text=text),)
    calls = [
        editor_call(
            command="str_replace", path=prompt, old_str=edit.rule.line, new_str=edit.new_line
        )
        for edit in edits
        if edit.rule is not None
    ]
    if added := [edit.new_line for edit in edits if edit.rule is None]:
        calls.append(
            editor_call(
                command="insert", path=prompt, insert_line=len(lines), new_str="\n".join(added)
            )
        )
    return tuple(calls)


def shell_call(command: str) -> ToolCall:
    return ToolCall("shell", {"command": command})


def editor_call(**arguments: Any) -> ToolCall:
    return ToolCall("editor", arguments)
