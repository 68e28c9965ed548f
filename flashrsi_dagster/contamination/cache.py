"""The contamination check's work kept on disk between processes: each candidate's run worker
is a process of its own, and building the benchmark's index and scanning the seed cost it about
3 s (`bench/RESULTS.md`) that the first candidate already paid.

A file holds plain data (marshal: no class is pickled) under a key, the digest of all that the
data depends on, this package's source included; a file whose key, format or payload digest
does not match, or that cannot be read, is ignored (the caller rebuilds what it holds). Files
are written whole (temp file and `os.replace`): two candidates racing each write one whole.
The folder is the experiment's host-only `cache/` (`ExperimentPaths.cache`).
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import tempfile
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from functools import cache
from pathlib import Path
from typing import Any

from flashrsi_dagster.contamination.detector import Found, Match, Scan
from flashrsi_dagster.contamination.normalise import Stream

FORMAT = 1
_CLASSES = {cls.__name__: cls for cls in (Scan, Match, Found, Stream)}
"""The dataclasses a stored scan is made of, rebuilt from their fields."""


@cache
def source_digest() -> str:
    """The digest of this package's source: a change to the check invalidates what it kept."""
    digest = hashlib.sha256(f"{FORMAT} {marshal.version}".encode())
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def key_of(*parts: Any) -> str:
    """The digest of `parts` (plain data marshal writes: str, bytes, int, tuples, lists,
    dicts) and of the package's source."""
    return hashlib.sha256(source_digest().encode() + marshal.dumps(parts)).hexdigest()


def files_digest(files: Mapping[str, bytes]) -> str:
    """The digest of a tree's paths and bytes (read in place: a seed's files are not copied)."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(marshal.dumps((path, len(files[path]))))
        digest.update(files[path])
    return digest.hexdigest()


def load(path: Path, key: str) -> Any | None:
    """The data stored at `path` under `key`, or None (absent, corrupt, truncated, stale)."""
    try:
        stored_key, digest, payload = marshal.loads(path.read_bytes())
        if stored_key != key or hashlib.sha256(payload).hexdigest() != digest:
            return None
        return marshal.loads(payload)
    except (OSError, EOFError, ValueError, TypeError):
        return None


def save(path: Path, key: str, data: Any) -> None:
    """Store `data` at `path` under `key`, whole; a folder that cannot be written keeps nothing
    (the next process rebuilds)."""
    payload = marshal.dumps(data)
    whole = marshal.dumps((key, hashlib.sha256(payload).hexdigest(), payload))
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(whole)
            os.replace(temporary, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)


def plain_scan(value: Any) -> Any:
    """`value` (a `Scan`, or a part of one) as plain data: a dataclass as its class name and
    fields (every field, so a field added later is kept too)."""
    if is_dataclass(value) and type(value).__name__ in _CLASSES:
        return (
            type(value).__name__,
            {f.name: plain_scan(getattr(value, f.name)) for f in fields(value)},
        )
    if isinstance(value, list | tuple):
        return type(value)(plain_scan(item) for item in value)
    if isinstance(value, str | bytes | int | float | bool | None):
        return value
    raise TypeError(f"a scan holds a {type(value).__name__}, which the cache does not store")


def scan_of(data: Any) -> Any:
    """The `Scan` (or part) `plain_scan` made `data` from."""
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[1], dict):
        name, values = data
        return _CLASSES[name](**{field: scan_of(value) for field, value in values.items()})
    if isinstance(data, list | tuple):
        return type(data)(scan_of(item) for item in data)
    return data
