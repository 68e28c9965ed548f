"""The gates every ModularRSI candidate passes, in order: scope, content, compile, review,
execution.

Scope, content and compile are checks of the framework (the changed paths as git reports
them; the contamination check of the candidate's files, `flashrsi_dagster.contamination`;
`compile()` of each changed Python file's text: candidate code is never imported here). The
review is a model's verdict on the full diff (`protocol.read_verdict`); execution runs the
candidate on one task, where a wrong answer is fine and a broken run is not.
"""

from __future__ import annotations

from collections.abc import Sequence

from flashrsi_dagster.algorithms.modular_rsi.protocol import Verdict
from flashrsi_dagster.algorithms.modular_rsi.records import Gate
from flashrsi_dagster.contamination import ContentVerdict
from flashrsi_dagster.records import Status, Trajectory
from flashrsi_dagster.snapshots import Snapshot, SnapshotStore
from flashrsi_dagster.snapshots.store import ChangedPath

RUNTIME_FAULTS = (Status.ERROR, Status.TIMEOUT)
"""Statuses that mean the harness itself broke (a wrong answer is `failure`)."""


def scope_gate(changed: Sequence[ChangedPath], allowed: Sequence[str]) -> Gate:
    """Only modifications (`M`) of the allowed files pass. Module files are existing regular
    files (the config refuses a missing or linked one): deleting one (`D`) or turning it into
    a link (`T`) changes the module's boundary, which no edit may do."""
    outside = [f"{c.status} {c.path}" for c in changed if c.path not in allowed]
    if outside:
        return Gate(
            name="scope",
            passed=False,
            reason=f"changed files outside the module's ({', '.join(allowed)}): "
            + ", ".join(outside),
        )
    unmodified = [f"{c.status} {c.path}" for c in changed if c.status != "M"]
    if unmodified:
        return Gate(
            name="scope",
            passed=False,
            reason="module files may be modified, not deleted, added or turned into links: "
            + ", ".join(unmodified),
        )
    return Gate(name="scope", passed=True, reason=f"{len(changed)} file(s), all in range")


def content_gate(verdict: ContentVerdict) -> Gate:
    """The candidate carries no benchmark content (its verdict's one Worker-safe line)."""
    return Gate(name="content", passed=not verdict.contaminated, reason=verdict.reason)


def compile_gate(store: SnapshotStore, candidate: Snapshot, changed: Sequence[ChangedPath]) -> Gate:
    """Each changed (added or modified) Python file compiled from its text, not imported."""
    sources = [c.path for c in changed if c.path.endswith(".py") and c.status != "D"]
    for path in sources:
        data = store.read_file_at(candidate, path)
        try:
            compile(data, path, "exec", dont_inherit=True)
        # A source too deep for the compiler raises RecursionError or MemoryError (the
        # parser's stack): a rejection of the file, never a crash of the step.
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            where = f" line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
            return Gate(
                name="compile", passed=False, reason=f"{path}{where}: {type(exc).__name__}: {exc}"
            )
    return Gate(name="compile", passed=True, reason=f"{len(sources)} Python file(s) compile")


def review_gate(verdict: Verdict) -> Gate:
    return Gate(name="review", passed=verdict.verdict == "accept", reason=verdict.reason)


def execution_gate(trajectory: Trajectory) -> Gate:
    """A run that broke (error, timeout) fails; so does one the infrastructure cut short, as
    it proves nothing (the previous version is kept). A wrong answer passes."""
    task = trajectory.task_id
    if trajectory.status in RUNTIME_FAULTS or trajectory.status == Status.INFRA_ERROR:
        detail = trajectory.error.message if trajectory.error else "no error recorded"
        return Gate(
            name="execution",
            passed=False,
            reason=f"task {task}: the candidate's run ended {trajectory.status}: {detail}",
        )
    return Gate(
        name="execution",
        passed=True,
        reason=f"task {task}: the candidate ran to an answer ({trajectory.status})",
    )
