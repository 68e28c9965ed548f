"""The beacon guard, a free prune before any run: a candidate that changes Python must place
an activation beacon — a call `activation_beacon("<mechanism>")` on the code path its
mechanism takes — in the lines it adds, so Gate-b can later tell whether the mechanism ever
fired. A Python edit without one is refused (blocked_l1); edits to prompts and other files
need none. The guard reads the unified diff as text: nothing is imported or run. A name is
what the runtime records (MiniAgent's `runtime/beacon.py`, into the trajectory's
`metadata["beacons"]`): 1 to 64 characters of letters, digits, `_`, `.`, `:` and `-`.

Honest limit (as the SOP's implementation says of its own): the guard proves a beacon was
added, not that it sits inside the mechanism's trigger; an unconditional beacon makes Gate-b
a no-op, and promotion then rests on the full-set win alone."""

from __future__ import annotations

import re

BEACON_CALL = re.compile(r"""\bactivation_beacon\(\s*["'][\w.:-]{1,64}["']\s*\)""")
_FILE = re.compile(r"^\+\+\+ b/(?P<path>.+)$")


def added_lines(diff: str) -> dict[str, list[str]]:
    """Lines each file gains in a unified diff (`git diff` output), by path."""
    added: dict[str, list[str]] = {}
    current: str | None = None
    for line in diff.splitlines():
        match = _FILE.match(line)
        if match:
            current = match["path"]
            added.setdefault(current, [])
        elif current is not None and line.startswith("+") and not line.startswith("+++"):
            added[current].append(line[1:])
    return added


def beacon_refusal(diff: str) -> str | None:
    """Why the candidate is refused, or None: every changed Python file that gains code must
    gain a beacon call among those lines (a comment mentioning one does not count)."""
    missing = []
    for path, lines in added_lines(diff).items():
        if not path.endswith(".py"):
            continue
        code = [line.split("#", 1)[0] for line in lines]
        if any(line.strip() for line in code) and not any(BEACON_CALL.search(c) for c in code):
            missing.append(path)
    if not missing:
        return None
    return (
        f"beacon guard: {', '.join(missing)} gain(s) code without an activation beacon; add "
        '`activation_beacon("<mechanism>")` where the new mechanism acts (a name of 1 to 64 '
        "letters, digits, '_', '.', ':' or '-')"
    )
