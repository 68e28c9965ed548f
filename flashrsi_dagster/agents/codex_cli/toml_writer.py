"""TOML text for a parsed document (what `tomllib` reads): the run's generated `config.toml`.

Tables become `[dotted.headers]`, arrays of tables inline tables; strings are escaped by the
TOML rules themselves (JSON's escapes are not all TOML's: no surrogate pairs there).
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def dumps(document: Mapping[str, Any]) -> str:
    lines: list[str] = []
    _table(document, (), lines)
    return "\n".join(lines) + "\n"


def _table(table: Mapping[str, Any], path: tuple[str, ...], lines: list[str]) -> None:
    subtables = {k: v for k, v in table.items() if isinstance(v, Mapping)}
    scalars = {k: v for k, v in table.items() if k not in subtables}
    if path and (scalars or not subtables):
        lines.append(f"[{'.'.join(map(key, path))}]")
    for name, value in scalars.items():
        lines.append(f"{key(name)} = {value_text(value)}")
    for name, value in subtables.items():
        _table(value, (*path, name), lines)


def key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else string(name)


def value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return string(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key(k)} = {value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(value_text(item) for item in value) + "]"
    raise TypeError(f"no TOML form for a {type(value).__name__}")


def string(text: str) -> str:
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
