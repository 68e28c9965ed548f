"""Experiment names: one rule for every place that takes one (the config's `experiment.name`,
the CLI's `--experiment`, the UI's start job, a home's folder read back by name).

A name becomes a folder under the home and part of Dagster partition keys, so it is a name,
never a path: no `/`, no `..`, not absolute, not hidden, and none of the characters partition
keys refuse (`|`, `,`, `[`, `]`).
"""

from __future__ import annotations

import re

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,79}")

NAME_RULE = "1-80 letters, digits, `_`, `.` or `-`, starting with a letter or digit, no `..`"


class InvalidName(ValueError):
    """A string given where an experiment name is expected that is not one."""


def name_problem(value: object) -> str | None:
    """What is wrong with `value` as an experiment name; None when it is one."""
    if isinstance(value, str) and _NAME.fullmatch(value) and ".." not in value:
        return None
    shown = repr(value)[:90]
    path = isinstance(value, str) and ("/" in value or "\\" in value or value.startswith("."))
    hint = " (a name, not a path: the folder of experiments is the home)" if path else ""
    return f"expected an experiment name: {NAME_RULE} (got {shown}){hint}"


def checked_name(value: str) -> str:
    """`value`, or `InvalidName` saying what a name is."""
    problem = name_problem(value)
    if problem:
        raise InvalidName(problem)
    return value
