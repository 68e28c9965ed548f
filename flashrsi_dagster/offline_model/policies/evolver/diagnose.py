"""The diagnosis: one WHY from the listed taxonomy for every failing run of the instruction.

Runs are `### task <id>` headings, each followed by a run summary (`evolver/train_runs.py`):
`Instruction:` and the task's text, then `Answer:`, `Expected:` and `Status: <status>[: <error>]`
lines. The WHY, by the text classification table's rules (the target is `simulator/target`):

1. the run did not finish with an answer (status neither success nor failure): `turn_limit`
   when the error names max_turns or a turn limit, else `instruction_ignored`;
2. the answer is not one of the task's allowed labels (`Labels:`): `answer_format`;
3. the answer is the first allowed label, the target's fallback when no rule fires:
   `missing_cue` when the text has a candidate keyword (as `prompt_edits` mines them), else
   `wrong_default`;
4. otherwise a rule fired toward the wrong label: `misleading_cue`.

A WHY the taxonomy does not list (another benchmark's table, an induced one) becomes the
first listed class whose name holds one of its stems (`STEMS`), else the first listed class.
`where` is always `prompt`; the evidence is one line (`evidence.py`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from flashrsi_dagster.offline_model.conversation import Reply
from flashrsi_dagster.offline_model.policies.evolver.evidence import Evidence
from flashrsi_dagster.offline_model.policies.evolver.instruction import (
    Instruction,
    json_reply,
    listed_classes,
)
from flashrsi_dagster.offline_model.policies.prompt_edits import pick_keywords
from flashrsi_dagster.offline_model.policies.rules import task

STEMS = {
    "turn_limit": ("turn", "timeout", "loop", "time"),
    "instruction_ignored": ("instruction", "ignored", "misread"),
    "answer_format": ("format", "output", "answer", "incomplete"),
    "missing_cue": ("missing", "cue", "knowledge", "incomplete"),
    "wrong_default": ("default", "wrong", "incorrect"),
    "misleading_cue": ("misleading", "cue", "wrong", "misread"),
}
FINISHED = ("success", "failure")
_RUN = re.compile(r"^### task (?P<task>\S+)[ \t]*$", re.MULTILINE)
_TURN_LIMIT = re.compile(r"max_turns|turn limit", re.IGNORECASE)
_CUT = " …[cut]"


@dataclass(frozen=True)
class Run:
    task: str
    instruction: str
    answer: str
    expected: str
    status: str
    error: str


def diagnose(instruction: Instruction) -> Reply:
    listed = list(listed_classes(_taxonomy_lines(instruction.text)))
    runs = read_runs(instruction.text)
    diagnoses = [
        {
            "task": run.task,
            "why": listed_why(why_of(run), listed),
            "where": "prompt",
            "evidence": evidence_of(run).line(),
        }
        for run in runs
    ]
    counts = Counter(d["why"] for d in diagnoses)
    said = ", ".join(f"{why} {n}" for why, n in sorted(counts.items())) or "none"
    lead = f"Simulator Evolver: diagnosed {len(runs)} failing task(s) ({said})."
    return json_reply(lead, {"diagnoses": diagnoses})


def _taxonomy_lines(text: str) -> list[str]:
    """The lines after `Taxonomy:` up to the first blank line."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "Taxonomy:"), None)
    if start is None:
        return []
    block = lines[start + 1 :]
    end = next((i for i, line in enumerate(block) if not line.strip()), len(block))
    return block[:end]


def read_runs(text: str) -> list[Run]:
    heads = list(_RUN.finditer(text))
    runs = []
    for head, following in zip(heads, [*heads[1:], None], strict=True):
        block = text[head.end() : following.start() if following else None].splitlines()
        if run := _run(head["task"], block):
            runs.append(run)
    return runs


def _run(task_id: str, lines: list[str]) -> Run | None:
    """A run summary's fields; its last `Status:` line ends it (an instruction may hold any
    line, and the instruction's own closing text follows the last run)."""
    at = next((i for i in reversed(range(len(lines))) if lines[i].startswith("Status: ")), None)
    if at is None or at < 2 or not lines[at - 1].startswith("Expected: "):
        return None
    if not lines[at - 2].startswith("Answer: "):
        return None
    start = next((i for i, line in enumerate(lines) if line.strip() == "Instruction:"), at - 2)
    status, _, error = lines[at].removeprefix("Status: ").partition(":")
    return Run(
        task=task_id,
        instruction="\n".join(lines[start + 1 : at - 2]).removesuffix(_CUT),
        answer=lines[at - 2].removeprefix("Answer: ").strip(),
        expected=lines[at - 1].removeprefix("Expected: ").strip(),
        status=status.strip(),
        error=error.strip(),
    )


def why_of(run: Run) -> str:
    """The text classification table's WHY for a failing run (the module docstring's rules)."""
    if run.status not in FINISHED:
        return "turn_limit" if _TURN_LIMIT.search(run.error) else "instruction_ignored"
    text, labels = task(run.instruction)
    allowed = [_bare(label) for label in labels]
    if allowed and _bare(run.answer) not in allowed:
        return "answer_format"
    if allowed and _bare(run.answer) == allowed[0]:
        return "missing_cue" if pick_keywords([text], set()) else "wrong_default"
    return "misleading_cue"


def listed_why(why: str, listed: list[str]) -> str:
    """`why` if listed, else the first listed class named by one of its stems, else the
    first listed class (`why` itself when nothing is listed)."""
    if why in listed or not listed:
        return why
    for stem in STEMS.get(why, ()):
        if name := next((name for name in listed if stem in name), None):
            return name
    return listed[0]


def evidence_of(run: Run) -> Evidence:
    return Evidence(run.expected, run.answer, task(run.instruction)[0])


def _bare(answer: str) -> str:
    return answer.strip().lower().strip(" \t\"'`.!*")
