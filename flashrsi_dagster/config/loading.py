"""Load an experiment config: YAML + overrides -> an `ExperimentConfig` or a `ConfigError`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from flashrsi_dagster.config import schema
from flashrsi_dagster.config.errors import ConfigError, Problem
from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.config.overrides import apply_overrides, parse_overrides
from flashrsi_dagster.config.secrets import is_reference
from flashrsi_dagster.config.yaml_source import KeyPath, load_yaml_document
from flashrsi_dagster.records.redaction import Redactor, is_identity_key, looks_like_key

_SHOWN_INPUT_CHARS = 60


def load_config(path: Path | str, overrides: list[str] | None = None) -> ExperimentConfig:
    """Read `path`, apply dotted `overrides`, validate. Writes nothing, raises `ConfigError`."""
    path = Path(path)
    document = load_yaml_document(path)
    parsed, problems = parse_overrides(list(overrides or []))
    applied, override_problems = apply_overrides(document.data, parsed, ExperimentConfig)
    problems += override_problems
    return _validate(path, document.data, document.lines, applied, problems)


def config_from_dict(
    data: dict[str, Any], *, base_dir: Path | None = None, source: str = "<dict>"
) -> ExperimentConfig:
    """Validate a config given as a Python mapping (relative paths against `base_dir`)."""
    context_dir = Path(base_dir) if base_dir is not None else Path.cwd()
    return _validate(Path(source), data, {}, {}, [], base_dir=context_dir)


def _validate(
    path: Path,
    data: dict[str, Any],
    lines: dict[KeyPath, int],
    applied: dict[tuple[str, ...], str],
    problems: list[Problem],
    base_dir: Path | None = None,
) -> ExperimentConfig:
    def locate(key_path: KeyPath) -> dict[str, Any]:
        flag = applied.get(tuple(map(str, key_path)))
        return {"override": flag} if flag else {"line": _nearest_line(lines, key_path)}

    problems = problems + [
        Problem(_dotted(key_path), message, **locate(key_path))
        for key_path, message in _literal_secrets(data)
    ]
    config = None
    try:
        context = {"base_dir": base_dir or path.resolve().parent}
        config = ExperimentConfig.model_validate(data, context=context)
    except ValidationError as exc:
        for error in exc.errors():
            key_path, message = _located(error)
            problems.append(Problem(_dotted(key_path), message, **locate(key_path)))
    if problems or config is None:
        raise ConfigError(path, _dedupe(problems))
    return config


def _literal_secrets(value: Any, path: KeyPath = ()) -> list[tuple[KeyPath, str]]:
    if isinstance(value, str):
        if looks_like_key(value) and not is_reference(value):
            return [
                (
                    path,
                    "this looks like a literal secret; export it as an environment "
                    "variable and write its reference instead, e.g. ${OPENAI_API_KEY}",
                )
            ]
        return []
    if isinstance(value, dict):
        # Paths and ids are not keys: a folder named `sk-…` is a folder (see is_identity_key).
        return [
            hit
            for key, item in value.items()
            if not (isinstance(key, str) and is_identity_key(key))
            for hit in _literal_secrets(item, (*path, key))
        ]
    if isinstance(value, list):
        return [hit for i, item in enumerate(value) for hit in _literal_secrets(item, (*path, i))]
    return []


def _key_path(loc: tuple[Any, ...]) -> KeyPath:
    """Map a pydantic error location onto config keys, dropping the tags unions insert."""
    return _walk(loc)[0]


def _walk(loc: tuple[Any, ...]) -> tuple[KeyPath, Any]:
    """The config keys of an error location, and the annotation found there (a union's tag
    in the location picks its member: the keys valid there are that member's)."""
    annotation: Any = ExperimentConfig
    keys: list[str | int] = []
    for element in loc:
        if element in schema.union_tags(annotation):
            annotation = schema.member(annotation, element)
            continue
        keys.append(element)
        inner = schema.child(annotation, element)
        annotation = Any if inner is schema.UNKNOWN else inner
    return tuple(keys), annotation


def _located(error: dict[str, Any]) -> tuple[KeyPath, str]:
    """Where an error belongs and what it says. A union told apart by a key (`name`) names
    that key, with the values it may take."""
    kind = error["type"]
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        key = error["ctx"]["discriminator"].strip("'")
        key_path, annotation = _walk(error["loc"])
        allowed = ", ".join(repr(v) for v in schema.literal_values(annotation, key))
        if kind == "union_tag_not_found":
            return (*key_path, key), f"required key is missing; expected one of: {allowed}"
        return (*key_path, key), f"expected one of: {allowed} (got {_shown(error['ctx']['tag'])})"
    return _key_path(error["loc"]), _message(error)


def _message(error: dict[str, Any]) -> str:
    kind, message = error["type"], error["msg"]
    if kind == "missing":
        return "required key is missing"
    if kind == "extra_forbidden":
        annotation = _walk(error["loc"][:-1])[1]
        return schema.unknown_key_message(str(error["loc"][-1]), schema.valid_keys(annotation))
    if kind in ("value_error", "assertion_error"):
        return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind == "model_type" or kind == "dict_type":
        return f"expected a mapping of keys, got {_shown(error.get('input'))}"
    return f"{message[0].lower()}{message[1:]} (got {_shown(error.get('input'))})"


def _shown(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    text = text.removesuffix("...").strip()
    if len(text) > _SHOWN_INPUT_CHARS:
        text = text[: _SHOWN_INPUT_CHARS - 1] + "…"
    # Never print a credential back, even when the user put one in the wrong place.
    return Redactor().text(text)


def _nearest_line(lines: dict[KeyPath, int], key_path: KeyPath) -> int | None:
    for depth in range(len(key_path), 0, -1):
        if key_path[:depth] in lines:
            return lines[key_path[:depth]]
    return None


def _dotted(key_path: KeyPath) -> str:
    return ".".join(str(key) for key in key_path)


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[str] = set()
    unique = []
    for problem in problems:
        if problem.key_path in seen and problem.key_path:
            continue
        seen.add(problem.key_path)
        unique.append(problem)
    return unique
