"""YAML with the strictness configs need: duplicate keys refused, aliases bounded
(`bounded_yaml`), every key's line remembered."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from flashrsi_dagster.bounded_yaml import AliasBombError, BoundedSafeLoader, NestingError
from flashrsi_dagster.config.errors import ConfigError, Problem

KeyPath = tuple[str | int, ...]


@dataclass
class YamlDocument:
    path: Path
    data: dict[str, Any]
    lines: dict[KeyPath, int] = field(default_factory=dict)
    """1-based line of every key and list item, for error messages."""


class _StrictLoader(BoundedSafeLoader):
    pass


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    first_line: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if key in first_line:
            raise _DuplicateKey(key, first_line[key], line)
        first_line[key] = line
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _DuplicateKey(Exception):
    def __init__(self, key: Any, first: int, again: int) -> None:
        super().__init__(key, first, again)
        self.key, self.first, self.again = key, first, again


def load_yaml_document(path: Path) -> YamlDocument:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(path, [Problem("", "config file does not exist")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, [Problem("", f"cannot read config file: {exc}")]) from None
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except _DuplicateKey as dup:
        message = f"duplicate key {dup.key!r} (first defined on line {dup.first})"
        raise ConfigError(path, [Problem(str(dup.key), message, line=dup.again)]) from None
    except (AliasBombError, NestingError) as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise ConfigError(path, [Problem("", str(exc.problem), line=line)]) from None
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(path, [_syntax_problem(exc)]) from None
    finally:
        loader.dispose()
    if data is None:
        expected = "expected a mapping with experiment, agent, algorithm and benchmark"
        raise ConfigError(path, [Problem("", f"config file is empty; {expected}")])
    if not isinstance(data, dict):
        found = type(data).__name__
        problem = Problem("", f"expected a mapping at the top level, found {found}")
        raise ConfigError(path, [problem])
    lines: dict[KeyPath, int] = {}
    _collect_lines(node, (), lines)
    return YamlDocument(path=path, data=data, lines=lines)


def _syntax_problem(exc: yaml.MarkedYAMLError) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark else None
    column = f", column {mark.column + 1}" if mark else ""
    what = " ".join(part for part in (exc.context, exc.problem) if part)
    return Problem("", f"YAML syntax error{column}: {what}", line=line)


def _collect_lines(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                child = (*path, key_node.value)
                lines[child] = key_node.start_mark.line + 1
                _collect_lines(value_node, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _collect_lines(item, (*path, index), lines)
