"""The shared libraries the staged interpreter needs, passed in beside it, so that it starts in
any glibc-based image, however minimal (bare `debian:bookworm-slim` has no `libssl.so.3`,
bare `ubuntu:24.04` no `libsqlite3.so.0`).

The closure is what the host's dynamic loader resolves (`ldd`) for the interpreter, its
`libpython`, the standard library's extension modules and the staged distributions' own,
the C library and the loader included: an image's glibc may be older than the host's, and
a host library linked against newer symbols would not load with it, while mixing one glibc's
loader with another's `libc.so.6` is unsafe. So the staged loader runs the interpreter
(`ld.so --library-path <folder> python ...`): the whole process uses the host's glibc and
libraries, and the image's own never. `--library-path` is the loader's argument, not an
environment variable, so the commands the agent runs (the image's tools) use the image's
libraries as they would without us.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterable
from functools import cache
from pathlib import Path

_EXTRA = ("libgcc_s.so.1",)
"""Opened by glibc itself at run time (`pthread_exit`, `pthread_cancel` unwind through it),
so never in an `ldd` listing: staged from the C library's folder where it is there."""

_LEFT_OUT = {f"_tkinter{suffix}" for suffix in importlib.machinery.EXTENSION_SUFFIXES}
"""A GUI toolkit no agent in a container uses (Tk, X11, fonts: half the closure's size)."""


@cache
def library_closure(objects: tuple[Path, ...]) -> dict[str, Path]:
    """Name the loader looks for (the SONAME) -> the host file, for every library `objects`
    need, the loader under its own file name."""
    found: dict[str, Path] = {}
    for path in objects:
        found.update(_needed(path))
    libc = found.get("libc.so.6")
    for name in _EXTRA if libc is not None else ():
        candidate = libc.parent / name
        if candidate.is_file():
            found.setdefault(name, candidate.resolve())
    return found


def loader_name(closure: dict[str, Path]) -> str:
    """The dynamic loader's name among `closure` (`ld-linux-x86-64.so.2` and the like)."""
    names = [name for name in closure if name.startswith("ld-linux") or name.startswith("ld64")]
    if len(names) != 1:
        raise RuntimeError(f"no single dynamic loader among the interpreter's libraries: {names}")
    return names[0]


def shared_objects(prefix: Path, python: Path, folders: Iterable[Path]) -> tuple[Path, ...]:
    """The interpreter, its `libpython`, and every extension module of the standard library
    and of `folders` (the staged distributions)."""
    dynload = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/lib-dynload/*.so"
    modules = [path for path in sorted(prefix.glob(dynload)) if path.name not in _LEFT_OUT]
    objects = [python, *sorted(prefix.glob("lib/libpython*.so*")), *modules]
    for folder in folders:
        objects.extend(sorted(folder.rglob("*.so")))
    return tuple(path.resolve() for path in objects if path.is_file())


def staged_libraries(objects: tuple[Path, ...], base: Path) -> Path:
    """A folder under `base` holding the closure of `objects` under their SONAMEs (regular
    files, no links: they are copied into containers), keyed by the files' paths, sizes and
    times; made once."""
    closure = library_closure(objects)
    digest = hashlib.sha256()
    for name, path in sorted(closure.items()):
        stat = path.stat()
        digest.update(f"{name}|{path}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    target = base / "flashrsi-container-libraries" / digest.hexdigest()[:16]
    if not target.is_dir():
        partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}")
        partial.mkdir(parents=True)
        for name, path in closure.items():
            shutil.copyfile(path, partial / name)
            os.chmod(partial / name, 0o755)  # the loader is run as a program
        os.chmod(partial, 0o755)
        try:
            os.rename(partial, target)
        except OSError:  # another process made it first
            shutil.rmtree(partial, ignore_errors=True)
    return target


def _needed(path: Path) -> dict[str, Path]:
    """What the host's loader resolves for one object (`ldd`; a static or non-ELF file needs
    nothing). A library the host itself cannot find is left out: that module cannot be
    imported on the host either, and is no more broken inside."""
    outcome = subprocess.run(
        ["ldd", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    found: dict[str, Path] = {}
    for line in outcome.stdout.splitlines():
        parts = line.split()
        if "=>" in parts and parts[parts.index("=>") + 1].startswith("/"):
            found[parts[0]] = Path(parts[parts.index("=>") + 1]).resolve()
        elif parts and parts[0].startswith("/"):  # the loader: `/lib64/ld-linux-x86-64.so.2 (…)`
            found[Path(parts[0]).name] = Path(parts[0]).resolve()
    return found
