"""The gates every ModularRSI candidate passes, in order: scope, content, compile, review,
execution, and, with `activation_gate`, activation.

Scope, content and compile are checks of the framework (the changed paths as git reports
them; the contamination check of the candidate's files, `flashrsi_dagster.contamination`;
`compile()` of each changed Python file's text: candidate code is never imported here). The
review is a model's verdict on the full diff (`protocol.read_verdict`); execution runs the
candidate on one task, where a wrong answer is fine and a broken run is not; activation asks
whether the change ran in that run, as the framework's side of the target observed it.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Mapping, Sequence

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


def changes_of(
    store: SnapshotStore, parent: Snapshot, candidate: Snapshot
) -> dict[str, frozenset[int] | None]:
    """Per changed file, the lines of the candidate's Python that the change touched and that
    can run (`changed_statements`); None for any other file (its use is its being read)."""
    changes: dict[str, frozenset[int] | None] = {}
    for c in store.changed_paths(parent, candidate):
        if c.path.endswith(".py") and c.status == "M":
            old, new = store.read_file_at(parent, c.path), store.read_file_at(candidate, c.path)
            changes[c.path] = changed_statements(old, new)
        else:
            changes[c.path] = None
    return changes


def changed_statements(old: bytes, new: bytes) -> frozenset[int]:
    """Lines of `new` that a change touched (added or replaced lines, and the lines either
    side of a deletion) and that hold a statement; never a blank or comment line, nor a
    `def` / `class` header, which runs when the module loads, not when the code does. Parsed
    (`ast`), never imported."""
    a = old.decode("utf-8", "replace").splitlines()
    b = new.decode("utf-8", "replace").splitlines()
    touched: set[int] = set()
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            touched.update(range(j1 + 1, j2 + 1))
        elif tag == "delete":
            touched.update((j1, j1 + 1))
    return frozenset(touched & _statement_lines("\n".join(b)))


def _statement_lines(source: str) -> set[int]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    lines: set[int] = set()
    headers = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, headers):
            body = getattr(node, "body", None)
            end = body[0].lineno - 1 if body else (node.end_lineno or node.lineno)
            lines.update(range(node.lineno, end + 1))
    return lines


def activation_gate(run: Trajectory, changes: Mapping[str, frozenset[int] | None]) -> Gate:
    """The change ran on the execution task: in each changed Python file a changed statement
    ran, each other changed file was opened. Read from `metadata["activation"]`, which the
    target's adapter takes from the framework's entry, never from a file the Worker edits
    (MiniAgent: `_entry._observe`). An adapter that reports none cannot show it either way:
    the gate passes and says so."""
    task, observed = run.task_id, run.metadata.get("activation")
    if not isinstance(observed, dict):
        reason = f"task {task}: not observed (the target's adapter reports no activation)"
        return Gate(name="activation", passed=True, reason=reason)
    opened, ran = set(observed.get("opened") or ()), observed.get("lines")
    idle = []
    for path, changed in sorted(changes.items()):
        if changed is not None and ran is not None:
            if not changed & set(ran.get(path, ())):
                idle.append(f"{path} (no changed statement ran)")
        elif path not in opened and path not in (ran or {}):
            idle.append(f"{path} (never read)")
    if idle:
        reason = f"task {task}: the change never ran: {', '.join(idle)}"
        return Gate(name="activation", passed=False, reason=reason)
    return Gate(name="activation", passed=True, reason=f"task {task}: every changed file ran")
