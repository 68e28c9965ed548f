"""Activation beacons: evolved code marks where its mechanism acts, so the evolution can tell a
mechanism that never fired from one that fired and did not help.

    from runtime.beacon import activation_beacon
    activation_beacon("retry_on_empty")   # on the path the mechanism takes

Each call counts one firing of the name in this run. The agent loop copies the counts into the
result's `beacons` (name -> count, in first-fired order) after every turn and at the end, so
they survive a kill as the turns do; the adapter keeps them as the trajectory's
`metadata["beacons"]`. One run is one process (the fork server imports the harness only in the
forked run), so this module's registry is the run's. Safe from any thread.

A name is 1 to 64 characters of letters, digits, `_`, `.`, `:` and `-` (what the Evolver's
beacon guard accepts); any other raises ValueError where it is called. Past 64 distinct names,
new names are ignored: a runaway or hostile caller cannot grow the record.
"""

from __future__ import annotations

import re
import threading

NAME = re.compile(r"[\w.:-]{1,64}")
MAX_NAMES = 64

_counts: dict[str, int] = {}
_lock = threading.Lock()


def activation_beacon(name: str) -> None:
    """Record that the mechanism `name` fired (once more) in this run."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(
            f"activation_beacon: {name!r} is not a beacon name (1 to 64 characters of "
            "letters, digits, '_', '.', ':' and '-')"
        )
    with _lock:
        if name in _counts or len(_counts) < MAX_NAMES:
            _counts[name] = _counts.get(name, 0) + 1


def fired() -> dict[str, int]:
    """The counts so far, name -> count in first-fired order: a copy, so the caller may
    serialise it while other threads keep firing."""
    with _lock:
        return dict(_counts)
