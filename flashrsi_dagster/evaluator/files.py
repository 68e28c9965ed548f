"""The evaluator's files, and their digests kept cheap.

Three roles:

- `module`: the framework's scoring code (`benchmarks/`, `rollouts/`, `evaluator/`, Harbor's
  built-in task folders aside): any change is refused.
- `verifier`: each environment task's `task.toml` and `tests/**` (Harbor): any change is
  refused.
- `data`: the task data given by the config (`data_path`, `evolution_data_path`, a folder of
  records) or built in (the classification corpus): a change is checked task by task
  (`sets.py`) — a recorded task may not change, a new task goes into a new version.

A file is hashed once per process; later checks re-stat it and hash again only when its
size, mtime, ctime or inode moved (ctime cannot be set back by a process that is not root).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from flashrsi_dagster.benchmarks.base import Task
from flashrsi_dagster.config.models import BenchmarkConfig

Role = Literal["module", "verifier", "data"]
PACKAGE = Path(__file__).resolve().parents[1]
SCORING_PACKAGES = ("benchmarks", "rollouts", "evaluator")
BUILTIN_DATA = {"text_classification": "bastioncorpus"}
"""Benchmarks whose built-in task data comes from an installed package."""

_seen: dict[str, tuple[tuple[int, int, int, int], str]] = {}
_lock = threading.Lock()


def digest(path: Path) -> str | None:
    """sha256 of the file's bytes; None when it is gone. Cached per process by stat."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    key = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
    with _lock:
        cached = _seen.get(str(path))
    if cached is not None and cached[0] == key:
        return cached[1]
    sha = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            sha.update(block)
    value = sha.hexdigest()
    with _lock:
        _seen[str(path)] = (key, value)
    return value


def scoring_modules() -> list[Path]:
    """The framework's scoring code, Harbor's built-in task folders aside (they are tasks)."""
    files = []
    for name in SCORING_PACKAGES:
        for path in sorted((PACKAGE / name).rglob("*.py")):
            if "tasks" not in path.relative_to(PACKAGE / name).parts[:-1]:
                files.append(path)
    return files


def verifier_files(task: Task) -> list[Path]:
    """An environment task's verifier: its `task.toml` and everything under `tests/`."""
    if task.environment is None:
        return []
    folder = Path(task.environment)
    tests = sorted(p for p in (folder / "tests").rglob("*") if p.is_file())
    return [folder / "task.toml", *tests]


def data_files(config: BenchmarkConfig) -> list[Path]:
    """The task data the config names (a file, or every visible file of a folder that is not
    a folder of Harbor tasks), else the benchmark's built-in data package."""
    given = [p for p in (config.data_path, config.tasks_dir, config.evolution_data_path) if p]
    files: list[Path] = []
    for path in map(Path, given):
        if path.is_file():
            files.append(path.resolve())
        elif path.is_dir() and not any(path.glob("*/task.toml")):
            files += _visible_files(path)
    package = BUILTIN_DATA.get(config.name)
    if config.data_path is None and package is not None:
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                files += _visible_files(Path(location))
    return files


def _visible_files(folder: Path) -> list[Path]:
    return sorted(
        p.resolve()
        for p in folder.rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def task_digest(task: Task) -> str:
    """A task's content identity: its checksum (instruction and verifier data) and, for an
    environment task, the bytes of its verifier files."""
    folder = Path(task.environment) if task.environment is not None else None
    files = [(str(p.relative_to(folder)), digest(p)) for p in verifier_files(task) if folder]
    blob = json.dumps([task.checksum, files], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def set_digest(pairs: Iterable[tuple[str, str]]) -> str:
    """One digest of (task id, task digest) pairs, in id order."""
    blob = json.dumps(sorted(pairs))
    return hashlib.sha256(blob.encode()).hexdigest()


def shown(path: Path) -> str:
    """A path as the manifest keys it: the framework's own files relative to the folder
    holding the package (`flashrsi_dagster/rollouts/scores.py`), others absolute."""
    try:
        return str(path.relative_to(PACKAGE.parent))
    except ValueError:
        return str(path)


def located(key: str) -> Path:
    """The file a manifest key names (`shown`'s inverse)."""
    path = Path(key)
    return path if path.is_absolute() else PACKAGE.parent / path
