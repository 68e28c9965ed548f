"""`components.yaml`: which harness files are evolvable, by role (code, prompt, skill, …)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from flashrsi_dagster.snapshots.guard import path_problem

COMPONENTS_FILE = "components.yaml"
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
    """Role -> globs, relative to the harness folder. Only matching files are evolvable."""

    roles: dict[str, tuple[str, ...]]

    @classmethod
    def parse(cls, data: Any, source: str = COMPONENTS_FILE) -> Components:
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
        return cls(roles)

    @classmethod
    def from_file(cls, path: Path) -> Components:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ComponentsError(f"{path}: components declaration not found") from None
        except yaml.YAMLError as exc:
            raise ComponentsError(f"{path}: YAML syntax error: {exc}") from None
        return cls.parse(data, str(path))

    def to_dict(self) -> dict[str, list[str]]:
        return {role: list(globs) for role, globs in self.roles.items()}

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

    def declares(self, path: str) -> bool:
        return self.role_of(path) is not None

    def select(self, paths: Iterable[str]) -> list[str]:
        return [path for path in paths if self.declares(path)]

    def describe(self) -> str:
        return "; ".join(f"{role}: {', '.join(globs)}" for role, globs in self.roles.items())
