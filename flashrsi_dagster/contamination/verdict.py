"""The contamination check's verdict on one candidate: a record, written once, read back on
resume (`ContentVerdict`), and the one line a Worker may be shown (`worker_reason`).

Held-out tasks (the sealed test split, and the pool outside the splits) are never named, in
any record: their hits keep the file, lines and kind of match, not the task. A Worker-visible
line names no task and no split at all (the files with hits and a count of tasks): a Worker
probing the dataset through the check must not learn which texts are held out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.contamination.detector import Found
from flashrsi_dagster.contamination.index import HELD_OUT, SecretIndex
from flashrsi_dagster.records import Record

MAX_HITS = 200
"""Hits kept in a verdict (the counts cover them all)."""
NAMED = 10
"""Task ids named in a one-line reason, at most."""


class Hit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: Literal["verbatim", "paired", "input", "fragments", "digest"]
    task_id: str | None = Field(description="None for a held-out task: never named.")
    split: Literal["train", "dev", "held_out"]
    secret: str = Field(description="Which of the task's secrets (`text`, `solution/solve.sh`).")
    file: str
    lines: tuple[int, int] = Field(description="First and last line of the file.")
    encoding: str = Field(description="`plain`, `escaped`, `base64`, `gzip+base64`, …")
    chars: int = Field(description="Characters matched, in normal form (0 for a digest).")


class ContentVerdict(Record):
    kind: Literal["content_verdict"] = "content_verdict"
    snapshot_id: str
    baseline_id: str = Field(description="What the candidate is judged against (its seed).")
    contaminated: bool
    rules: list[str] = Field(description="The thresholds the candidate crossed, in words.")
    hits: list[Hit] = Field(description=f"The evidence (the first {MAX_HITS}).")
    hit_count: int
    tasks: dict[str, int] = Field(description="Distinct tasks hit, per split.")
    named: dict[str, list[str]] = Field(
        default_factory=dict, description="The train and dev task ids hit."
    )
    files: int = Field(description="Files the candidate changed against the baseline, searched.")

    @property
    def reason(self) -> str:
        """The verdict in one line, safe to show a Worker (no held-out task, nor where)."""
        return worker_reason(self)


def verdict(
    snapshot_id: str,
    baseline_id: str,
    found: list[Found],
    rules: list[str],
    index: SecretIndex,
    files: int,
) -> ContentVerdict:
    hits = sorted(set(_hits(_merged(found), index)), key=_order)
    tasks: dict[str, set[int]] = {}
    for f in found:
        tasks.setdefault(index.tasks[f.task][1], set()).add(f.task)
    named = {
        split: sorted({index.tasks[t][0] for t in numbers})
        for split, numbers in tasks.items()
        if split != HELD_OUT
    }
    return ContentVerdict(
        snapshot_id=snapshot_id,
        baseline_id=baseline_id,
        contaminated=bool(rules),
        rules=rules,
        hits=hits[:MAX_HITS],
        hit_count=len(hits),
        tasks={split: len(numbers) for split, numbers in sorted(tasks.items())},
        named=named,
        files=files,
    )


def _merged(found: Iterable[Found]) -> list[Found]:
    """One hit per rule, task, secret and file, over the lines of all of them; it keeps the
    encoding found first (views come plain first, so the simplest one)."""
    merged: dict[tuple, Found] = {}
    for f in found:
        key = (f.rule, f.task, f.secret, f.file)
        if key in merged:
            was = merged[key]
            lines = (min(was.lines[0], f.lines[0]), max(was.lines[1], f.lines[1]))
            f = Found(
                f.rule, f.task, f.secret, f.file, was.encoding, lines, max(was.chars, f.chars)
            )
        merged[key] = f
    return list(merged.values())


def _hits(found: Iterable[Found], index: SecretIndex) -> Iterable[Hit]:
    for f in found:
        task_id, split = index.tasks[f.task]
        yield Hit(
            rule=f.rule,  # type: ignore[arg-type]
            task_id=None if split == HELD_OUT else task_id,
            split=split,  # type: ignore[arg-type]
            secret=f.secret,
            file=f.file,
            lines=f.lines,
            encoding=f.encoding,
            chars=f.chars,
        )


def _order(hit: Hit) -> tuple:
    return (hit.split == HELD_OUT, hit.file, hit.lines, hit.rule, hit.task_id or "")


def worker_reason(v: ContentVerdict) -> str:
    """The verdict as a Worker may see it: the rules, how many tasks, every file with a hit.
    No task and no split: a line naming the train and dev tasks hit and counting the others
    would tell a Worker probing the public dataset which of its texts are in the sealed test."""
    if not v.contaminated:
        return f"no benchmark content found in the {v.files} changed file(s)"
    tasks = sum(v.tasks.values())
    files = sorted({h.file for h in v.hits})
    more = f" and {len(files) - NAMED} more" if len(files) > NAMED else ""
    return (
        f"the candidate carries benchmark content ({'; '.join(v.rules)}): {tasks} task(s) "
        f"in {', '.join(files[:NAMED])}{more}; a harness must not carry tasks or their answers"
    )
