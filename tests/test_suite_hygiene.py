"""Rules for the test suite itself: tests pass at any load.

A loaded 2-core machine runs a test 10-30x slower than an idle one, so no test asserts an
upper bound on wall-clock time: it asserts what happened (a status, an event, an error class)
and waits on conditions with generous bounds (`tests.conftest.wait_until`). Timings belong in
`bench/`. A bound that is genuinely generous (thousands of times what the code needs, far
below what the broken code took) may stay with a comment `# generous bound: <why>` on the
assertion or just above it.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

TESTS = Path(__file__).parent
CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns", "time_ns"}
TIMED_NAMES = {"elapsed", "duration", "took", "closing", "per_check"}
"""Names (variables or attributes) that hold a measured duration in this suite."""
EXEMPTION = "# generous bound:"


def _is_clock_call(node: ast.AST) -> bool:
    """`time.monotonic()` and its kin."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in CLOCKS
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "time"
    )


def _clock_difference(node: ast.AST) -> bool:
    """Whether `node` subtracts a clock reading (`time.monotonic() - started`)."""
    return any(
        isinstance(inner, ast.BinOp)
        and isinstance(inner.op, ast.Sub)
        and (_is_clock_call(inner.left) or _is_clock_call(inner.right))
        for inner in ast.walk(node)
    )


def _measured(node: ast.AST, names: set[str]) -> bool:
    """Whether `node` holds a measured duration: a clock difference, a name assigned one, or
    a name (or attribute, or key) the suite uses for durations."""
    if _clock_difference(node):
        return True
    for inner in ast.walk(node):
        match inner:
            case ast.Name(id=name) if name in names or name in TIMED_NAMES:
                return True
            case ast.Attribute(attr=name) if name in TIMED_NAMES:
                return True
            case ast.Subscript(slice=ast.Constant(value=key)) if key in TIMED_NAMES:
                return True
    return False


def _duration_names(tree: ast.AST) -> set[str]:
    """Names assigned a clock difference anywhere in the module (`elapsed = now() - clock`)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _clock_difference(node.value):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _upper_bounds(compare: ast.Compare, names: set[str]) -> bool:
    """Whether the comparison bounds a measured duration from above (`elapsed < 5`,
    `5 > elapsed`); lower bounds hold however slow the machine is."""
    sides = [compare.left, *compare.comparators]
    for index, op in enumerate(compare.ops):
        left, right = sides[index], sides[index + 1]
        if isinstance(op, ast.Lt | ast.LtE) and _measured(left, names):
            return True
        if isinstance(op, ast.Gt | ast.GtE) and _measured(right, names):
            return True
    return False


def _exempt(lines: list[str], assertion: ast.Assert) -> bool:
    """A `# generous bound:` comment on the assertion's lines or the comment block above."""
    if any(EXEMPTION in line for line in lines[assertion.lineno - 1 : assertion.end_lineno]):
        return True
    above = assertion.lineno - 2
    while above >= 0 and lines[above].strip().startswith("#"):
        if EXEMPTION in lines[above]:
            return True
        above -= 1
    return False


def wall_clock_assertions(source: str) -> list[int]:
    """Line numbers of assertions that bound a measured duration from above, unexempted."""
    tree = ast.parse(source)
    lines = source.splitlines()
    names = _duration_names(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        compares = [c for c in ast.walk(node.test) if isinstance(c, ast.Compare)]
        if any(_upper_bounds(c, names) for c in compares) and not _exempt(lines, node):
            found.append(node.lineno)
    return sorted(found)


def test_no_test_asserts_an_upper_bound_on_wall_clock_time():
    offenders = [
        f"{path.relative_to(TESTS.parent)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        for line in wall_clock_assertions(path.read_text(encoding="utf-8"))
    ]

    assert offenders == [], (
        "these assertions fail on a loaded machine: assert what happened instead, or mark a "
        f"genuinely generous bound with '{EXEMPTION} <why>': {offenders}"
    )


def test_the_check_sees_each_way_a_duration_is_written():
    flagged = """
clock = time.monotonic()
elapsed = time.monotonic() - clock
assert elapsed < 5
assert trajectory.status == Status.TIMEOUT and elapsed < 8
assert time.monotonic() - clock < 3
assert 0.3 <= elapsed < 1.5
assert trajectory.duration < 6 + 3
assert notes["took"]["w1c1"] < 30
assert 5 > time.perf_counter() - started
"""
    allowed = """
elapsed = time.monotonic() - clock
assert elapsed >= 2.5  # a lower bound holds however slow the machine
assert trajectory.duration >= timeout
assert time.monotonic() - clock < 60  # generous bound: ms of work; the bug took hours
# generous bound: ms of work; the bug took hours
assert time.monotonic() - clock < 60
assert len(items) < 5 and status == "done"
ended = max(t.started.timestamp() + t.duration for t in dev)
assert test_started.timestamp() >= ended  # an order of sequential events, not a bound
"""

    assert wall_clock_assertions(flagged) == [4, 5, 6, 7, 8, 9, 10]
    assert wall_clock_assertions(allowed) == []


def test_the_bootstrapped_tools_and_environment_are_never_committed():
    """`.tools/` and `.venv/` are made by the Makefile on each machine. A link to them (as a
    git worktree is given) once got committed, and a checkout then replaced a real `.tools/`
    with a link to itself: `make test` could not start."""
    tracked = subprocess.run(
        ["git", "ls-files", "--", ".tools", ".venv"],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()

    assert tracked == []
