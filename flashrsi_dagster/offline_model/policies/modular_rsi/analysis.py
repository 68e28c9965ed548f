"""The analysis phase: findings from the batch's trajectories, as classification guidance.

The Worker's folder holds the version under study (`candidate/`) and the batch's whole
trajectories (`trajectories/<task>/<n>.json`); the instruction's summary groups the tasks
(`### task <id> · group <kind> · ...`, with an `#### earlier success` sample when the module's
memory holds one).

1. `shell`: `find trajectories -type f -name '*.json' | sort`, and `cat candidate/<file>` for
   each of the module's files, in one reply.
2. `shell`: `cat` each listed trajectory (at most 50), in one reply.
3. The answer, a JSON object in a ```json block (`protocol.py`):
   - the findings' file is the first module file that can carry guidance: a `.md` file, or a
     Python file holding a place of the module (`places.py`); JSON files (hooks) never. With
     none, the answer is an empty list;
   - `all_succeeded` tasks give no finding (a success took the target one turn: nothing to
     gain); the failing samples of `mixed` and `all_failed` tasks (score < 1 or status not
     success, with `metadata.expected`) give keyword guidance as the Meta-Harness worker mines
     it (`prompt_edits.plan_edits`, one text per task, against the rules of the system prompt
     they ran with): one finding per failing label, citing the batch's tasks of that label
     whose text holds one of the keywords, and naming an earlier success in the module's
     memory when there is one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from flashrsi_dagster.offline_model.conversation import Conversation, Reply
from flashrsi_dagster.offline_model.policies.modular_rsi.instruction import (
    Instruction,
    shell_text,
)
from flashrsi_dagster.offline_model.policies.modular_rsi.places import find_places
from flashrsi_dagster.offline_model.policies.prompt_edits import Failure, plan_edits
from flashrsi_dagster.offline_model.policies.worker import (
    cat_command,
    failure_in,
    find_command,
    json_object,
    listed_files,
    results_by_request,
    shell_call,
)

CANDIDATE = "candidate"
TRAJECTORIES = "trajectories"
"""The analysis folder's layout (`algorithms/modular_rsi/prompts.py`, which a test compares)."""

_TASK = re.compile(r"^### task (?P<id>.+?) · group (?P<kind>\w+) · ", re.MULTILINE)
_EARLIER = re.compile(r"^#### earlier success\b", re.MULTILINE)


@dataclass(frozen=True)
class Sample:
    task_id: str
    failure: Failure | None
    answer: str
    system: str


def analyse(conversation: Conversation, instruction: Instruction) -> Reply:
    done = results_by_request(conversation)
    first = [find_command(TRAJECTORIES)]
    first += [cat_command(f"{CANDIDATE}/{path}") for path in instruction.files]
    if missing := [command for command in first if ("shell", command) not in done]:
        return Reply(tool_calls=tuple(map(shell_call, missing)))
    listing = shell_text(done[("shell", find_command(TRAJECTORIES))])[1]
    reads = [cat_command(path) for path in listed_files(listing, TRAJECTORIES)]
    if unread := [command for command in reads if ("shell", command) not in done]:
        return Reply(tool_calls=tuple(map(shell_call, unread)))
    sources = {}
    for path in instruction.files:
        code, text = shell_text(done[("shell", cat_command(f"{CANDIDATE}/{path}"))])
        if code in (None, 0):
            sources[path] = text
    samples = [s for command in reads if (s := _sample(shell_text(done[("shell", command)])[1]))]
    findings, note = plan_findings(instruction, sources, samples)
    body = json.dumps({"findings": findings}, indent=2, ensure_ascii=False)
    head = f"Simulator worker, analysis of {instruction.module}: {note}"
    return Reply(text=f"{head}\n```json\n{body}\n```")


def plan_findings(
    instruction: Instruction, sources: dict[str, str], samples: list[Sample]
) -> tuple[list[dict], str]:
    """(findings, a sentence saying what they rest on)."""
    groups = {m["id"]: m["kind"] for m in _TASK.finditer(instruction.text)}
    earlier = _earlier_successes(instruction.text)
    failing = [
        s
        for s in samples
        if s.failure and s.task_id in groups and groups[s.task_id] != "all_succeeded"
    ]
    if not failing:
        return [], f"no failing sample among {len(groups)} task(s); nothing to change."
    target = _target_file(instruction, sources)
    if target is None:
        return [], (
            f"{len(failing)} failing sample(s), but none of {', '.join(instruction.files)} "
            "can carry classification guidance; nothing to change."
        )
    system = list(dict.fromkeys(line for s in failing for line in s.system.splitlines()))
    # One text per task: its samples share it, and keywords rank by the tasks that hold them.
    per_task = {s.task_id: s.failure for s in failing}
    edits = plan_edits(system, list(per_task.values()))
    findings = []
    for edit in edits:
        of_label = [s for s in failing if s.failure.label == edit.label]
        tasks = [
            s.task_id
            for s in of_label
            if any(word in s.failure.text.lower() for word in edit.keywords)
        ]
        tasks = list(dict.fromkeys(tasks))
        answers = ", ".join(sorted({f"`{s.answer}`" for s in of_label}))
        reason = (
            f"{len(of_label)} failing sample(s) expected `{edit.label}` and answered {answers}; "
            f"what the model saw has no rule for {', '.join(edit.keywords)}, which the texts of "
            f"{', '.join(tasks)} hold"
        )
        if remembered := [t for t in tasks if t in earlier]:
            reason += f"; {', '.join(remembered)} succeeded earlier (the module's memory)"
        rule = f"- {edit.label} when the text mentions: {', '.join(edit.keywords)}"
        findings.append(
            {
                "file": target,
                "tasks": tasks,
                "reason": reason,
                "change": f"make the model see this guidance: `{rule}`",
            }
        )
    note = f"{len(failing)} failing sample(s) give {len(findings)} guidance finding(s) on {target}."
    return findings, note


def _earlier_successes(summary: str) -> set[str]:
    found = set()
    tasks = list(_TASK.finditer(summary))
    for match, following in zip(tasks, [*tasks[1:], None], strict=True):
        block = summary[match.end() : following.start() if following else len(summary)]
        if _EARLIER.search(block):
            found.add(match["id"])
    return found


def _target_file(instruction: Instruction, sources: dict[str, str]) -> str | None:
    for path in instruction.files:
        if path not in sources:
            continue
        if path.endswith(".md"):
            return path
        if path.endswith(".py") and find_places(sources[path].splitlines(), instruction.module):
            return path
    return None


def _sample(output: str) -> Sample | None:
    record = json_object(output)
    if record is None or record.get("kind") != "trajectory":
        return None
    messages = record.get("messages") if isinstance(record.get("messages"), list) else []
    systems = [m for m in messages if isinstance(m, dict) and m.get("role") == "system"]
    system = str(systems[0].get("content") or "") if systems else ""
    return Sample(
        task_id=str(record.get("task_id", "")),
        failure=failure_in(output),
        answer=str(record.get("answer") or ""),
        system=system,
    )
