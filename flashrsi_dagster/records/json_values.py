"""Keep every record JSON: YAML values JSON cannot hold travel as `{type: yaml, value: <yaml>}`.

Dates, timestamps, binary, sets, non-finite floats and mappings with non-string keys are dumped
as YAML text and restored by `from_json_value`, so a record round-trips exactly while the
experiment config file itself keeps its native YAML types.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import yaml

_TAG = {"type", "value"}


def to_json_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _as_yaml(value)
    if isinstance(value, list | tuple):
        return [to_json_value(item) for item in value]
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value) or _is_tagged(value):
            # Non-string keys would be coerced by JSON; a literal {type: yaml, value} mapping
            # would be mistaken for an encoded value on the way back.
            return _as_yaml(dict(value))
        return {key: to_json_value(item) for key, item in value.items()}
    return _as_yaml(value)


def from_json_value(value: Any) -> Any:
    if isinstance(value, list):
        return [from_json_value(item) for item in value]
    if isinstance(value, dict):
        if _is_tagged(value) and isinstance(value["value"], str):
            return yaml.safe_load(value["value"])
        return {key: from_json_value(item) for key, item in value.items()}
    return value


def _is_tagged(value: Mapping) -> bool:
    return set(value) == _TAG and value.get("type") == "yaml"


def _as_yaml(value: Any) -> dict[str, str]:
    try:
        text = yaml.safe_dump(value, allow_unicode=True, sort_keys=False)
    except yaml.representer.RepresenterError as exc:
        raise TypeError(f"value of type {type(value).__name__} cannot be recorded: {exc}") from exc
    return {"type": "yaml", "value": text}
