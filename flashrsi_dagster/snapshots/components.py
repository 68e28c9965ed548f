"""`components.yaml`: which harness files are evolvable, by role (code, prompt, skill, …)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from flashrsi_dagster.bounded_yaml import safe_load
from flashrsi_dagster.snapshots.guard import path_problem

COMPONENTS_FILE = "components.yaml"
PROTECTED = "protected"
"""The section naming evaluator-protected paths (see `snapshots.protection`); not a role."""
_ROLE = re.compile(r"[a-z][a-z0-9_]*")


class ComponentsError(ValueError):
    """A malformed components declaration: names the file and the key."""


def glob_to_regex(pattern: str) -> str:
    """`**` spans folders (zero or more), `*` and `?` stay within one path segment."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class Components:
    """Role -> globs, relative to the harness folder. Only matching files are evolvable.

    `protected` lists the evaluator-protected entries (`glob` or `glob#key`, see
    `snapshots.protection`); None when the file has no `protected:` section, so the adapter's
    own list applies (`with_protection`)."""

    roles: dict[str, tuple[str, ...]]
    protected: tuple[str, ...] | None = None

    @classmethod
    def parse(cls, data: Any, source: str = COMPONENTS_FILE) -> Components:
        if isinstance(data, dict) and PROTECTED in data:
            data = dict(data)
            protected = _protected_entries(data.pop(PROTECTED), source)
        else:
            protected = None
        if not isinstance(data, dict) or not data:
            raise ComponentsError(
                f"{source}: expected a mapping of role -> list of globs, "
                "e.g. `prompt: [prompts/**]`"
            )
        roles: dict[str, tuple[str, ...]] = {}
        for role, globs in data.items():
            if not isinstance(role, str) or not _ROLE.fullmatch(role):
                raise ComponentsError(f"{source}: role {role!r}: expected a lower-case name")
            if isinstance(globs, str):
                globs = [globs]
            if not isinstance(globs, list) or not globs:
                raise ComponentsError(f"{source}: {role}: expected a non-empty list of globs")
            for index, glob in enumerate(globs):
                where = f"{source}: {role}[{index}]"
                if not isinstance(glob, str):
                    raise ComponentsError(f"{where}: expected a glob string, got {glob!r}")
                problem = path_problem(glob)
                if problem:
                    raise ComponentsError(f"{where}: {glob!r}: {problem}")
                if glob == COMPONENTS_FILE:
                    raise ComponentsError(f"{where}: the declaration itself cannot be evolvable")
            roles[role] = tuple(globs)
        return cls(roles, protected)

    @classmethod
    def from_file(cls, path: Path) -> Components:
        try:
            data = safe_load(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ComponentsError(f"{path}: components declaration not found") from None
        except yaml.YAMLError as exc:
            raise ComponentsError(f"{path}: YAML syntax error: {exc}") from None
        return cls.parse(data, str(path))

    def to_dict(self) -> dict[str, list[str]]:
        roles = {role: list(globs) for role, globs in self.roles.items()}
        if self.protected is None:
            return roles
        return {**roles, PROTECTED: list(self.protected)}

    def with_protection(self, default: tuple[str, ...]) -> Components:
        """These components with `default` (the adapter's list) as the protected entries,
        unless the file has its own `protected:` section (an empty one protects nothing)."""
        if self.protected is not None:
            return self
        return Components(self.roles, tuple(default))

    @cached_property
    def _matchers(self) -> list[tuple[str, re.Pattern[str]]]:
        return [
            (role, re.compile("|".join(f"(?:{glob_to_regex(g)})" for g in globs)))
            for role, globs in self.roles.items()
        ]

    def role_of(self, path: str) -> str | None:
        if path == COMPONENTS_FILE:
            return None
        for role, matcher in self._matchers:
            if matcher.fullmatch(path):
                return role
        return None

    def prompt_file(self, files: list[str]) -> str:
        """The first file of the `prompt` role (else the first file): where a Worker editing
        the harness naturally starts."""
        prompts = sorted(f for f in files if self.role_of(f) == "prompt")
        return prompts[0] if prompts else (sorted(files)[0] if files else "")

    def declares(self, path: str) -> bool:
        return self.role_of(path) is not None

    def select(self, paths: Iterable[str]) -> list[str]:
        return [path for path in paths if self.declares(path)]

    def describe(self) -> str:
        return "; ".join(f"{role}: {', '.join(globs)}" for role, globs in self.roles.items())


def _protected_entries(value: Any, source: str) -> tuple[str, ...]:
    """`protected:` as a list of `glob` or `glob#key` strings (possibly empty)."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ComponentsError(f"{source}: {PROTECTED}: expected a list of globs (or glob#key)")
    for index, entry in enumerate(value):
        where = f"{source}: {PROTECTED}[{index}]"
        if not isinstance(entry, str):
            raise ComponentsError(f"{where}: expected a glob string, got {entry!r}")
        glob, _, key = entry.partition("#")
        problem = path_problem(glob)
        if problem:
            raise ComponentsError(f"{where}: {glob!r}: {problem}")
        if "#" in entry and not key:
            raise ComponentsError(f"{where}: {entry!r}: nothing after `#` (expected a key)")
    return tuple(value)
