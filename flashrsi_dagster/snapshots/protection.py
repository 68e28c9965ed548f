"""Evaluator-protected harness paths: what no candidate may change.

The rule: a harness file (or a key of one) is evaluator-protected when it holds, as data, a
permission or a budget the run is held to — a limit, a timeout, an allow-list, a settings file
that grants tools — rather than the harness's behaviour. A candidate that changes one would be
measured under other rules than its parent, so its score would say nothing about the harness;
the commit is refused (`commit_child`), whatever the algorithm.

An entry is a glob over harness paths (`settings.json`, `.claude/**`), or `glob#key` for one
top-level key of a YAML, JSON or TOML file (`agent.yaml#limits`, `config.toml#limits`): the
rest of that file stays evolvable. Each adapter declares its entries (`Agent.protected`); a
harness's `components.yaml` may replace them with a `protected:` section. The list is fixed in
the seed snapshot and inherited by every child, and `components.yaml` itself is never
evolvable.

What this cannot cover: runtime code that ignores a limit it was given. So the limits that hold
whatever the harness does (the rollout timeout, the jail, the gateway's caps, the scoring
outside the jail) live in the framework, outside every snapshot, and a protected limit the
harness applies is applied again there (`agents/protected_limits.py`): the snapshot's copy is
at most a stricter request.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import yaml

from flashrsi_dagster.bounded_yaml import safe_load
from flashrsi_dagster.snapshots.components import glob_to_regex
from flashrsi_dagster.snapshots.guard import Refusal

PROTECTED_KIND = "protected"
"""`Refusal.kind` of a refusal for a protected path."""
REASON = "evaluator-protected"
"""How every protected refusal's reason begins."""


class _Changed(Protocol):
    status: str
    path: str


@dataclass(frozen=True)
class ProtectedEntry:
    glob: str
    key: str | None = None

    @classmethod
    def parse(cls, entry: str) -> ProtectedEntry:
        glob, _, key = entry.partition("#")
        return cls(glob, key or None)

    def matches(self, path: str) -> bool:
        return re.fullmatch(glob_to_regex(self.glob), path) is not None

    def describe(self) -> str:
        return f"{self.glob}#{self.key}" if self.key else self.glob


def entries(protected: Iterable[str]) -> list[ProtectedEntry]:
    return [ProtectedEntry.parse(entry) for entry in protected]


def protected_changes(
    protected: Iterable[str],
    changed: Sequence[_Changed],
    before: Callable[[str], bytes | None],
    after: Callable[[str], bytes | None],
) -> list[Refusal]:
    """A refusal for every changed path that touches a protected entry. `before` and `after`
    read a path's bytes in the parent and the candidate (None when absent); only entries
    with a key read anything."""
    refusals = []
    for entry in entries(protected):
        for change in changed:
            if not entry.matches(change.path):
                continue
            if entry.key is None:
                refusals.append(refusal(change.path, entry, f"{_verb(change.status)} the file"))
            elif problem := _key_problem(entry.key, change, before, after):
                refusals.append(refusal(change.path, entry, problem))
    return refusals


def mark_protected(refusals: Sequence[Refusal], protected: Iterable[str]) -> list[Refusal]:
    """Path-guard refusals of whole-file protected paths (e.g. an undeclared settings file
    the edit added), re-worded to say that the path is protected."""
    whole = [e for e in entries(protected) if e.key is None]
    out = []
    for item in refusals:
        entry = next((e for e in whole if e.matches(item.path)), None)
        out.append(item if entry is None else refusal(item.path, entry, item.reason))
    return out


def refusal(path: str, entry: ProtectedEntry, what: str) -> Refusal:
    reason = (
        f"{REASON} ({entry.describe()}): {what}; a candidate may not change the permissions or "
        "budgets it is evaluated under"
    )
    return Refusal(path, reason, kind=PROTECTED_KIND)


def _verb(status: str) -> str:
    return {"A": "added", "D": "deleted", "T": "changed the type of"}.get(status, "modified")


def _key_problem(
    key: str,
    change: _Changed,
    before: Callable[[str], bytes | None],
    after: Callable[[str], bytes | None],
) -> str | None:
    if change.status == "T":
        return f"changed the type of the file holding `{key}`"
    toml = change.path.endswith(".toml")
    try:
        was = key_value(before(change.path), key, toml)
        now = key_value(after(change.path), key, toml)
    except ValueError:
        kind = "TOML" if toml else "YAML"
        return f"the file cannot be read as {kind}, so `{key}` cannot be shown unchanged"
    return None if was == now else f"changed `{key}`"


ABSENT = object()
"""What `key_value` returns for a key (or file) that is not there."""


def key_value(data: bytes | None, key: str, toml: bool = False) -> Any:
    """The value of top-level `key` in a YAML (or TOML) file's bytes; ValueError when the
    file cannot be read as one."""
    if data is None:
        return ABSENT
    try:
        document = tomllib.loads(data.decode()) if toml else safe_load(data)
    except (yaml.YAMLError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from None
    if document is None:
        return ABSENT
    if not isinstance(document, dict):
        raise ValueError("not a mapping")
    return document.get(key, ABSENT)
