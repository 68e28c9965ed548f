"""The instructions ModularRSI gives its model roles, one per phase.

Each starts with marker lines (`instruction_markers`: the phase, the module, its files) that
the offline simulator's policies read; a real model reads them as prose. What the roles
answer is `protocol.py`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

from flashrsi_dagster.algorithms.modular_rsi import markers
from flashrsi_dagster.algorithms.modular_rsi.findings import Target
from flashrsi_dagster.algorithms.modular_rsi.modules import RESPONSIBILITIES

TRAJECTORIES = "trajectories"
"""The analysis folder's full trajectories: `<task id>/<sample>.json`, untruncated."""
MEMORY = "memory"
"""The analysis folder's success memory: `<task id>.json`, the module's earliest success."""
CANDIDATE = "candidate"
"""The analysis folder's read-only copy of the version under study."""


def _head(phase: str, module: str, files: Sequence[str]) -> str:
    return (
        f"{markers.PHASE} {phase}\n{markers.MODULE} {module}\n"
        f"{markers.MODULE_FILES} {', '.join(files)}\n"
    )


ANALYSIS = """\
You are improving one module of an agent harness: {module} ({responsibility}).
The folder you are in holds the version under study (`{candidate}/`), every rollout of this
batch, untruncated (`{trajectories}/<task id>/<sample>.json`), and the module's memory of
earlier successes (`{memory}/<task id>.json`). Below is a summary per task. Tasks are grouped:
`mixed` (some samples succeeded: contrast them), `all_failed` (compare with the earlier success
when there is one, else diagnose the failure), `all_succeeded` (look for efficiency gains).

{summary}

Only the module's files may change: {files}. Do not edit anything now. Answer with one JSON
object, in a ```json block:
{{"findings": [{{"file": "<one of the module's files>", "tasks": ["<supporting task id>", ...],
"reason": "<what the trajectories show>", "change": "<the change you suggest>"}}]}}
Cite only task ids from this batch. An empty list means nothing is worth changing.
"""


def analysis_instruction(module: str, files: Sequence[str], summary: str) -> str:
    return _head("analysis", module, files) + ANALYSIS.format(
        module=module,
        responsibility=RESPONSIBILITIES[module],
        candidate=CANDIDATE,
        trajectories=TRAJECTORIES,
        memory=MEMORY,
        summary=summary,
        files=", ".join(files),
    )


EDIT = """\
You are improving one module of an agent harness: {module} ({responsibility}). The folder you
are in is the current version; edit it in place. Change only these files: {files}, and only
what belongs to this module's responsibility (a shared file holds other modules' code too:
leave it as it is). Other changes are refused, and a refused edit uses up this batch.

The analysis of this batch's rollouts asks for these changes, by file, most supported first:

{targets}

Make the edits, keep the code runnable, and finish with a short summary of what you changed.
"""


def edit_instruction(module: str, files: Sequence[str], targets: Sequence[Target]) -> str:
    return _head("edit", module, files) + EDIT.format(
        module=module,
        responsibility=RESPONSIBILITIES[module],
        files=", ".join(files),
        targets="\n\n".join(target.describe() for target in targets),
    )


REVIEW = """\
Review this change to the {module} module of an agent harness ({responsibility}). It may
change only {files}, and only for that responsibility. Reject it if it is unrelated to the
module, breaks the harness, hard-codes answers to specific tasks, or weakens its limits.

```diff
{diff}
```

Answer with one JSON object, in a ```json block:
{{"verdict": "accept" or "reject", "reason": "<why>"}}
"""


def review_instruction(module: str, files: Sequence[str], diff: str) -> str:
    responsibility = RESPONSIBILITIES.get(module, "merging the module branches")
    return _head("review", module, files) + REVIEW.format(
        module=module, responsibility=responsibility, files=", ".join(files), diff=diff
    )


INTEGRATION = """\
The folder you are in is the seed version of an agent harness. Each module was evolved on a
branch of its own, from this same seed; `{references}/<module>/` holds each chosen branch's
whole version (read-only; it is removed before your edit is committed):

{branches}

Merge every branch's changes into this folder, shared files included: keep each module's
improvement, and where two branches changed the same code, combine them. Change only these
files: {files}. Finish with a short summary of the merge.
"""


def integration_instruction(
    files: Sequence[str], references: str, branches: Sequence[tuple[str, str]]
) -> str:
    listed = "\n".join(f"- {module}: {diffstat}" for module, diffstat in branches)
    return (
        _head("integration", "integration", files)
        + f"{markers.REFERENCES} {references}\n"
        + INTEGRATION.format(references=references, branches=listed, files=", ".join(files))
    )


REPAIR = """\
The folder you are in is the merged version of an agent harness's module branches. Checked on
every evolution task it showed the problems below. Fix them here: resolve conflicts between the
modules' changes, remove duplicated mechanisms, and repair anything that no longer runs. The
branches' own versions are still in `{references}/<module>/` (read-only). Change only these
files: {files}.

{problems}

The check's runs of those tasks, grouped per task: `mixed` (contrast the samples),
`all_failed` (compare with the earliest success a branch had of the task, when there is one,
else diagnose), `all_succeeded`:

{evidence}

Finish with a short summary of what you changed.
"""


def repair_instruction(files: Sequence[str], references: str, problems: str, evidence: str) -> str:
    return (
        _head("repair", "integration", files)
        + f"{markers.REFERENCES} {references}\n"
        + REPAIR.format(
            references=references, files=", ".join(files), problems=problems, evidence=evidence
        )
    )


GATE_REPAIR = """\
The folder you are in is a candidate edit of the {module} module of an agent harness
({responsibility}), which the {gate} check turned down:

{finding}

Repair the candidate so that it passes, keeping what the edit set out to do. Change only
these files: {files}. Finish with a short summary of what you changed.
"""


def gate_repair_instruction(module: str, files: Sequence[str], gate: str, finding: str) -> str:
    responsibility = RESPONSIBILITIES.get(module, "merging the module branches")
    return _head("gate_repair", module, files) + GATE_REPAIR.format(
        module=module,
        responsibility=responsibility,
        gate=gate,
        finding=finding,
        files=", ".join(files),
    )
