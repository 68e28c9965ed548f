"""The read-only Python runtime a jailed agent gets: the interpreter's installation and only
the site-packages its harness needs, never the framework's own.

The framework's virtual environment also holds the benchmark's data (the classification
labels ship in a package), Dagster and this framework: a harness that could import them
could read the labels or the sealed test. So the jail shows the interpreter's standard
library, and from site-packages exactly the distributions named here and what they require,
each at its host path (a warm fork server imported them from there before the run joined the
jail, and later imports must find the same files).
"""

from __future__ import annotations

import sys
import sysconfig
from functools import cache
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from flashrsi_dagster.environments.jail import JailSpec, Mount

HARNESS_DISTRIBUTIONS = ("openai", "pyyaml")
"""What a Python harness may import beyond the standard library (with their requirements)."""


@cache
def python_runtime(distributions: tuple[str, ...] = HARNESS_DISTRIBUTIONS) -> JailSpec:
    """Mounts for the interpreter and `distributions` (computed once per process)."""
    prefix = Path(sys.base_prefix).resolve()
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    mounts = [Mount(prefix)]
    for top in sorted(_top_level_paths(_closure(distributions))):
        mounts.append(Mount(site / top))
    base_site = Path(sysconfig.get_paths(vars={"base": str(prefix)})["purelib"]).resolve()
    # The interpreter's own site-packages (pip, and whatever was installed there) is hidden.
    hidden = (base_site,) if base_site.is_relative_to(prefix) and base_site != site else ()
    return JailSpec(tuple(mounts), hidden)


def site_packages() -> Path:
    """Where the harness's distributions live (for a fork server's `sys.path`)."""
    return Path(sysconfig.get_paths()["purelib"]).resolve()


def _closure(names: tuple[str, ...]) -> list[metadata.Distribution]:
    seen: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        dist = metadata.distribution(todo.pop())
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen:
            continue
        seen[key] = dist
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
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
