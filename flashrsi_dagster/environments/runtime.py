"""The read-only Python runtime a jailed agent gets: the interpreter's installation and only
the site-packages its harness needs, never the framework's own.

The framework's virtual environment also holds the benchmark's data (the classification
labels ship in a package), Dagster and this framework: a harness that could import them
could read the labels or the sealed test. So the jail shows the interpreter's standard
library and one folder holding exactly the distributions named here and what they require,
at its host path (a warm fork server imported them from there before the run joined the
jail, and later imports must find the same files).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import py_compile
import shutil
import sys
import sysconfig
import threading
import uuid
from functools import cache
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from flashrsi_dagster.environments.jail import JailSpec, Mount

_assembling = threading.Lock()
_prepared: Path | None = None
_interpreter: tuple[str, ...] | None = None

HARNESS_DISTRIBUTIONS = ("openai", "pyyaml")
"""What a Python harness may import beyond the standard library (with their requirements)."""


@cache
def python_runtime(distributions: tuple[str, ...] = HARNESS_DISTRIBUTIONS) -> JailSpec:
    """Mounts for the interpreter and `distributions` (computed once per process)."""
    prefix = Path(sys.base_prefix).resolve()
    base_site = Path(sysconfig.get_paths(vars={"base": str(prefix)})["purelib"]).resolve()
    # The interpreter's own site-packages (pip, and whatever was installed there) is hidden.
    hidden = (base_site,) if base_site.is_relative_to(prefix) else ()
    return JailSpec((Mount(prefix), Mount(site_packages(distributions))), hidden)


def use_prepared(folder: Path) -> None:
    """This process already runs on an assembled folder (inside a task environment, where the
    framework's site-packages is absent): every `site_packages` request answers with it."""
    global _prepared
    _prepared = Path(folder)


def use_interpreter(argv: list[str]) -> None:
    """This process was started by `argv` (inside a task environment: the staged loader with
    the staged libraries, `integrations.libraries`); `interpreter` answers with it."""
    global _interpreter
    _interpreter = tuple(argv)


def interpreter() -> list[str]:
    """The command that starts this interpreter for a child process: the image's libraries
    may not run it inside a task environment, so there it is the one that started us."""
    return list(_interpreter or (os.path.realpath(sys.executable),))


def site_packages(distributions: tuple[str, ...] = HARNESS_DISTRIBUTIONS) -> Path:
    """A folder holding exactly `distributions` and their requirements, made once beside the
    framework's site-packages (hard links where the file system allows): one read-only mount
    per jail instead of one per package, and the same path for the fork server's imports."""
    return _prepared if _prepared is not None else _assembled(distributions)


@cache
def _assembled(distributions: tuple[str, ...]) -> Path:
    source = Path(sysconfig.get_paths()["purelib"]).resolve()
    dists = _closure(distributions)
    key = ",".join(sorted(f"{d.metadata['Name']}=={d.version}" for d in dists))
    digest = hashlib.sha256(f"{source}|{key}".encode()).hexdigest()[:16]
    target = source.parent / "flashrsi-harness-runtime" / digest
    _ensure(source, sorted(_top_level_paths(dists)), target)
    return target


def _ensure(source: Path, tops: list[str], target: Path) -> None:
    """`target` holding `tops` from `source`, complete, whoever asks at the same time: rollouts
    start concurrently (one thread assembles, the others wait), and processes race by rename."""
    with _assembling:
        if not target.is_dir():
            _assemble(source, tops, target)


def _assemble(source: Path, tops: list[str], target: Path) -> None:
    # Unique per attempt: another process may be assembling the same folder right now.
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for top in tops:
        if (source / top).is_dir():
            shutil.copytree(source / top, partial / top, copy_function=_link_or_copy)
        elif (source / top).exists():
            _link_or_copy(source / top, partial / top)
    os.chmod(partial, 0o755)
    try:
        os.rename(partial, target)
    except OSError:  # another process made it first
        shutil.rmtree(partial, ignore_errors=True)


def _link_or_copy(source: str | Path, target: str | Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def pinned(distributions: tuple[str, ...]) -> list[str]:
    """`name==version` of `distributions` and their requirements, as installed here."""
    return sorted(f"{d.metadata['Name']}=={d.version}" for d in _closure(distributions))


def _closure(names: tuple[str, ...]) -> list[metadata.Distribution]:
    """The distributions `names` need, with the extras their requirements ask for (e.g.
    `pyjwt[crypto]` brings `cryptography`)."""
    seen: dict[str, metadata.Distribution] = {}
    extras_seen: dict[str, set[str]] = {}
    todo: list[tuple[str, frozenset[str]]] = [(name, frozenset()) for name in names]
    while todo:
        name, extras = todo.pop()
        dist = metadata.distribution(name)
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen and extras <= extras_seen[key]:
            continue
        seen[key] = dist
        extras_seen.setdefault(key, set()).update(extras)
        for line in dist.requires or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": e}) for e in {"", *extras}):
                todo.append((requirement.name, frozenset(requirement.extras)))
    return list(seen.values())


def _top_level_paths(dists: list[metadata.Distribution]) -> set[str]:
    """The first path component of each file a distribution installed into site-packages
    (its packages, modules, extension modules and its .dist-info folder)."""
    tops: set[str] = set()
    for dist in dists:
        for file in dist.files or []:
            parts = Path(file).parts
            if parts and parts[0] not in ("..", "__pycache__") and not parts[0].endswith(".pth"):
                tops.add(parts[0])
    return tops


_compiled: set[Path] = set()
_compiling = threading.Lock()


def compile_snapshot(folder: Path) -> None:
    """Byte-compile a snapshot's own Python files, on the host, once per process, before a
    run shows it read-only (every run would otherwise compile every module it imports).
    Links are skipped: compiling `x.py -> <host file>` would put that host file, compiled,
    into the snapshot's `__pycache__`, where the harness reads it (compileall follows file
    links). The rollouts of a batch start together on one checkout: one compiles it, the
    others wait for it (compiling it side by side, each holding the GIL in turn, took as long
    as compiling it once per rollout)."""
    if folder in _compiled:
        return
    with _compiling:
        if folder not in _compiled:
            _compile_own_files(folder)
            _compiled.add(folder)


def _compile_own_files(folder: Path) -> None:
    for parent, folders, files in os.walk(folder):  # never into a linked folder
        folders[:] = [name for name in folders if name != "__pycache__"]
        for name in files:
            path = os.path.join(parent, name)
            if name.endswith(".py") and not os.path.islink(path):
                with contextlib.suppress(OSError):  # best effort: a read-only snapshot, say
                    py_compile.compile(path, doraise=False, quiet=2)
