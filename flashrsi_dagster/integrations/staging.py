"""What the host puts into a task environment for an agent to run there, made once per
process and reused by every trial: the interpreter, one folder with exactly the distributions
the framework and the adapter need (at the host's installed versions), and the framework's
own source — its Python modules only, without the benchmark's task folders (their tests and
reference solutions must never be in reach of the agent they score).

Inside, each has a fixed place (`PLACES`); the interpreter keeps its host path, where its
standard library expects to be found.
"""

from __future__ import annotations

import compileall
import hashlib
import os
import shutil
import sys
import sysconfig
import threading
import uuid
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

import flashrsi_dagster
from flashrsi_dagster.environments.runtime import compile_snapshot, pinned, site_packages

FRAMEWORK_DISTRIBUTIONS = ("pydantic", "pyyaml", "packaging", "gitpython")
"""What the framework's entry imports inside (config, records, the adapter base, and the
snapshot store the agents package names); an adapter adds its own `_container_dependencies`."""
INSIDE = PurePosixPath("/flashrsi")
PLACES = {
    "site_packages": INSIDE / "site-packages",
    "source": INSIDE / "src",
    "snapshot": INSIDE / "snapshot",
}
ENTRY = "flashrsi_dagster/integrations/container_entry.py"
_EXCLUDED = ("benchmarks/harbor/tasks",)
"""Source folders never passed in: task data (tests, solutions) lives there."""
_lock = threading.Lock()


@dataclass(frozen=True)
class Staged:
    """Host folders to pass in, and the interpreter to run there."""

    prefix: Path
    python: Path
    site_packages: Path
    source: Path
    distributions: tuple[str, ...]
    """`name==version` of everything in `site_packages`: what the environment gets."""


def distributions_for(adapter: type) -> tuple[str, ...]:
    declared = adapter._container_dependencies or ()
    return tuple(sorted({*FRAMEWORK_DISTRIBUTIONS, *(d.lower() for d in declared)}))


@cache
def staged(distributions: tuple[str, ...]) -> Staged:
    """The folders for an adapter needing `distributions` (see `distributions_for`)."""
    folder = site_packages(distributions)
    with _lock:  # once per set of distributions (cached); compileall skips what is current
        compileall.compile_dir(folder, quiet=2, workers=1)
    return Staged(
        prefix=Path(sys.base_prefix).resolve(),
        python=Path(os.path.realpath(sys.executable)),
        site_packages=folder,
        source=framework_source(),
        distributions=tuple(pinned(distributions)),
    )


def compiled_snapshot(files_dir: Path) -> Path:
    """The snapshot, byte-compiled first: it is read-only inside, and would otherwise be
    compiled again by every run."""
    compile_snapshot(files_dir)  # its own files only, never a linked host file
    return files_dir


@cache
def framework_source() -> Path:
    """A folder holding a filtered copy of the `flashrsi_dagster` package (its `.py` files,
    outside `_EXCLUDED`), keyed by their paths, sizes and times, compiled once."""
    package = Path(flashrsi_dagster.__file__).parent
    files = sorted(_modules(package))
    digest = hashlib.sha256()
    for path in files:
        stat = path.stat()
        digest.update(f"{path.relative_to(package)}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    base = Path(sysconfig.get_paths()["purelib"]).resolve().parent
    target = base / "flashrsi-container-source" / digest.hexdigest()[:16]
    with _lock:
        if not target.is_dir():
            _copy(package, files, target)
    return target


def _modules(package: Path):
    for path in package.rglob("*.py"):
        relative = path.relative_to(package).as_posix()
        if not any(relative.startswith(f"{excluded}/") for excluded in _EXCLUDED):
            yield path


def _copy(package: Path, files: list[Path], target: Path) -> None:
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}")
    for path in files:
        destination = partial / "flashrsi_dagster" / path.relative_to(package)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination)
    compileall.compile_dir(partial, quiet=2, workers=1)
    os.chmod(partial, 0o755)
    try:
        os.rename(partial, target)
    except OSError:  # another process made it first
        shutil.rmtree(partial, ignore_errors=True)
