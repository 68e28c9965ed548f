"""The review phase: a verdict on the full diff, by rules a human reviewer would apply too.

Read from the review instruction alone: the module (`Module:`), its files (`Module files:`),
its responsibility (the parenthesis after "module of an agent harness") and the diff (the
```diff block). The first rule that applies decides:

1. An empty diff: reject, there is nothing to review.
2. A changed file outside the module's files: reject (the scope gate's rule, checked again).
3. Added lines carrying classification guidance (`<label> when the text mentions: ...`) in a
   module that does not decide what the model reads: reject, the change is outside the
   module's responsibility. Guidance belongs to `GUIDING_MODULES`: context management (the
   system prompt and history), observation management (what the model sees of tool results),
   the extension modules `prompt` and `skill`, and the integration that merges them.
4. A removed line naming a limit (`LIMITS`) that no added line names again: reject, the change
   weakens the harness's limits.
5. Otherwise: accept, saying what changed.

The answer is `{"verdict": ..., "reason": ...}` in a ```json block (`protocol.py`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from flashrsi_dagster.offline_model.conversation import Reply
from flashrsi_dagster.offline_model.policies.modular_rsi.instruction import Instruction

GUIDING_MODULES = frozenset(
    {"context_management", "observation_management", "prompt", "skill", "integration"}
)
LIMITS = ("max_turns", "output_limit", "shell_timeout", "timeout")
_GUIDANCE = re.compile(r"\b(?P<label>\w[\w.-]*)`?\s+when the text mentions:", re.IGNORECASE)
_RESPONSIBILITY = re.compile(r"module of an agent harness \((?P<text>[^)]*)\)")
_PATH = re.compile(r"^(?:\+\+\+|---) (?:[ab]/)?(?P<path>.+?)\s*$")


@dataclass
class Diff:
    files: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def read_diff(instruction: str) -> Diff:
    """The files, added and removed lines of the instruction's ```diff block."""
    start = instruction.find("```diff\n")
    end = instruction.rfind("\n```")
    diff = Diff()
    if start < 0 or end < start:
        return diff
    for line in instruction[start + len("```diff\n") : end].splitlines():
        if line.startswith(("+++ ", "--- ")):
            path = _PATH.match(line)["path"]
            if path != "/dev/null" and path not in diff.files:
                diff.files.append(path)
        elif line.startswith("+"):
            diff.added.append(line[1:])
        elif line.startswith("-"):
            diff.removed.append(line[1:])
    return diff


def judge(instruction: Instruction) -> tuple[str, str]:
    """(verdict, reason) by the rules of the module docstring."""
    diff, module = read_diff(instruction.text), instruction.module
    if not diff.added and not diff.removed:
        return "reject", "the diff is empty: there is no change to review"
    if outside := [path for path in diff.files if path not in instruction.files]:
        return "reject", (
            f"it changes {', '.join(outside)}, outside the module's files "
            f"({', '.join(instruction.files)})"
        )
    guidance = [line.strip() for line in diff.added if _GUIDANCE.search(line)]
    if guidance and module not in GUIDING_MODULES:
        match = _RESPONSIBILITY.search(instruction.text)
        duty = f" ({' '.join(match['text'].split())})" if match else ""
        return "reject", (
            f"it adds classification guidance for the model ({guidance[0]}), which decides what "
            f"the model reads: that is context or observation management's responsibility, "
            f"not {module}'s{duty}"
        )
    for limit in LIMITS:
        dropped = any(re.search(rf"\b{limit}\b", line) for line in diff.removed)
        if dropped and not any(re.search(rf"\b{limit}\b", line) for line in diff.added):
            return "reject", f"it removes the `{limit}` limit, which weakens the harness"
    what = f"+{len(diff.added)} -{len(diff.removed)} line(s) in {', '.join(diff.files)}"
    if guidance:
        what += f", classification guidance where {module} puts what the model reads"
    return "accept", f"the change stays within {module}'s files and responsibility ({what})"


def review(instruction: Instruction) -> Reply:
    verdict, reason = judge(instruction)
    body = json.dumps({"verdict": verdict, "reason": reason}, ensure_ascii=False)
    return Reply(text=f"Simulator reviewer, {instruction.module}: {verdict}.\n```json\n{body}\n```")
