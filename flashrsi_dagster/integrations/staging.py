"""What the host puts into a task environment for an agent to run there, made once per
process and reused by every trial: the interpreter, one folder with exactly the distributions
the framework and the adapter need (at the host's installed versions), and the framework's
own source — its Python modules only, without the benchmark's task folders (their tests and
reference solutions must never be in reach of the agent they score).

Inside, each has a fixed place (`PLACES`); the interpreter keeps its host path, where its
standard library expects to be found. Beside them, the shared libraries the interpreter and
those modules need, with the host's C library and loader (`libraries`), which starts it there.
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
from flashrsi_dagster.integrations.libraries import (
    library_closure,
    loader_name,
    shared_objects,
    staged_libraries,
)

FRAMEWORK_DISTRIBUTIONS = ("pydantic", "pyyaml", "packaging", "gitpython")
"""What the framework's entry imports inside (config, records, the adapter base, and the
snapshot store the agents package names); an adapter adds its own `_container_dependencies`."""
INSIDE = PurePosixPath("/flashrsi")
PLACES = {
    "site_packages": INSIDE / "site-packages",
    "source": INSIDE / "src",
    "snapshot": INSIDE / "snapshot",
    "libraries": INSIDE / "lib",
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
    libraries: Path
    """The shared-library closure, the C library and its loader included."""
    loader: str
    """The loader's file name in `libraries`."""

    @property
    def interpreter(self) -> tuple[str, ...]:
        """The command that starts the interpreter inside: through the staged loader, with
        the staged libraries only, whatever the image's own are (see `libraries`)."""
        folder = PLACES["libraries"]
        return (str(folder / self.loader), "--library-path", str(folder), str(self.python))


def distributions_for(adapter: type) -> tuple[str, ...]:
    declared = adapter._container_dependencies or ()
    return tuple(sorted({*FRAMEWORK_DISTRIBUTIONS, *(d.lower() for d in declared)}))


@cache
def staged(distributions: tuple[str, ...]) -> Staged:
    """The folders for an adapter needing `distributions` (see `distributions_for`)."""
    folder = site_packages(distributions)
    prefix, python = Path(sys.base_prefix).resolve(), Path(os.path.realpath(sys.executable))
    objects = shared_objects(prefix, python, (folder,))
    with _lock:  # once per set of distributions (cached); compileall skips what is current
        compileall.compile_dir(folder, quiet=2, workers=1)
        libraries = staged_libraries(objects, _cache_base())
    return Staged(
        prefix=prefix,
        python=python,
        site_packages=folder,
        source=framework_source(),
        distributions=tuple(pinned(distributions)),
        libraries=libraries,
        loader=loader_name(library_closure(objects)),
    )


def _cache_base() -> Path:
    """Beside the framework's site-packages: where the staged folders are kept."""
    return Path(sysconfig.get_paths()["purelib"]).resolve().parent


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
    target = _cache_base() / "flashrsi-container-source" / digest.hexdigest()[:16]
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
