"""Dotted command-line overrides: `--algorithm.max_steps 2` or `--benchmark.limit=9`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from flashrsi_dagster.bounded_yaml import AliasBombError, NestingError, safe_load
from flashrsi_dagster.config import schema
from flashrsi_dagster.config.errors import Problem


@dataclass(frozen=True)
class Override:
    key_path: tuple[str, ...]
    raw: str
    flag: str
    """How the user wrote the key, e.g. `--algorithm.max_steps`, for messages."""


def parse_overrides(tokens: list[str]) -> tuple[list[Override], list[Problem]]:
    overrides: list[Override] = []
    problems: list[Problem] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if not token.startswith("--") or len(token) == 2:
            problems.append(
                Problem(
                    "", f"unexpected argument {token!r}; overrides look like --section.key VALUE"
                )
            )
            continue
        flag, has_value, raw = token.partition("=")
        if not has_value:
            if index >= len(tokens) or tokens[index].startswith("--"):
                problems.append(Problem(flag[2:], f"override {flag} has no value", override=flag))
                continue
            raw = tokens[index]
            index += 1
        key = flag[2:]
        if any(not part for part in key.split(".")):
            problems.append(Problem(key, f"malformed override key {flag}", override=flag))
            continue
        overrides.append(Override(tuple(key.split(".")), raw, flag))
    return overrides, problems


def apply_overrides(
    data: dict[str, Any], overrides: list[Override], root: type
) -> tuple[dict[tuple[str, ...], str], list[Problem]]:
    """Set each override into `data`, typed by the schema; returns {key path: flag} and problems."""
    applied: dict[tuple[str, ...], str] = {}
    problems: list[Problem] = []
    for override in overrides:
        annotation, problem = _annotation_at(root, override, data)
        if problem is None:
            try:
                problem = _set(data, override, _coerce(override.raw, annotation))
            except (AliasBombError, NestingError) as exc:
                key = ".".join(override.key_path)
                problem = Problem(key, str(exc.problem), override=override.flag)
        if problem is None:
            applied[override.key_path] = override.flag
        else:
            problems.append(problem)
    return applied, problems


def _annotation_at(
    root: type, override: Override, data: dict[str, Any]
) -> tuple[Any, Problem | None]:
    annotation: Any = root
    node: Any = data
    for depth, key in enumerate(override.key_path):
        # A union of sections (`algorithm`) is the member the config's `name` picks.
        annotation = schema.narrow(annotation, node)
        inner = schema.child(annotation, key)
        if inner is schema.UNKNOWN:
            path = ".".join(override.key_path[: depth + 1])
            message = schema.unknown_key_message(key, schema.valid_keys(annotation))
            return None, Problem(path, message, override=override.flag)
        annotation = inner
        node = node.get(key) if isinstance(node, dict) else None
    return annotation, None


def _coerce(raw: str, annotation: Any) -> Any:
    if schema.is_path(annotation) and raw.strip():
        # A path typed on the command line is relative to where the user typed it (an empty
        # one is left to the schema, which refuses it: it would be that folder).
        return str(Path(raw).expanduser().resolve())
    if schema.is_textual(annotation):
        return raw
    try:
        return safe_load(raw)
    except (AliasBombError, NestingError):
        raise
    except yaml.YAMLError:
        return raw  # the schema then reports the type mismatch with the key path


def _set(data: dict[str, Any], override: Override, value: Any) -> Problem | None:
    node = data
    for depth, key in enumerate(override.key_path[:-1]):
        nxt = node.setdefault(key, {})
        if nxt is None:
            nxt = node[key] = {}
        if not isinstance(nxt, dict):
            path = ".".join(override.key_path[: depth + 1])
            found = type(nxt).__name__
            return Problem(
                path,
                f"cannot set {override.flag}: {path} holds a {found}, not a mapping",
                override=override.flag,
            )
        node = nxt
    node[override.key_path[-1]] = value
    return None
