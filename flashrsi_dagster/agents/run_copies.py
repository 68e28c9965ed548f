"""A run's own copies of snapshot files: what an adapter copies into a per-run folder (a
home, a plugin folder), so nothing the run does writes into the snapshot."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path


def copy_resources(
    files_dir: Path, target: Path, names: Iterable[str], *, folders_only: bool = False
) -> None:
    """Copies of the snapshot's `names` (files or folders; absent ones are skipped) into
    `target`. A name that is itself a link is skipped: copying it would read host files into
    the run. Links inside a folder stay links, resolved inside the jail, never on the host."""
    for name in names:
        source = files_dir / name
        if source.is_symlink():
            continue
        if source.is_dir():
            shutil.copytree(source, target / name, symlinks=True)
        elif source.is_file() and not folders_only:
            shutil.copyfile(source, target / name, follow_symlinks=False)


def writable_folders(root: Path) -> None:
    """Every folder under `root` writable by its owner: a snapshot checked out read-only
    copies as read-only folders the run could not write, nor the framework remove."""
    for folder, _, _ in os.walk(root):
        os.chmod(folder, os.stat(folder).st_mode | stat.S_IRWXU)
