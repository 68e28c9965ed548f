"""Each call's own Codex home (`CODEX_HOME`): a copy of the snapshot's core and resources.

    <run folder>/home/              writable inside the jail; removed with the run folder
      python_core/                  the snapshot's core (its code runs from here)
      AGENTS.md  config.toml        the snapshot's instructions and settings
      skills/  hooks/
      plugins/cache/<name>/         only the plugins config.toml enables
      plugins/data/  shell_snapshots/   run state the core makes and removes

Nothing of the host's `~/.codex` (skills, plugins, memory) is read: the core reads only this
folder and the task's cwd. `config.toml` is checked here, outside the jail, for what the core
must never be told (a native binary, other connection settings): the core is evolvable code,
so these refusals cannot live only in it."""

from __future__ import annotations

import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from flashrsi_dagster.agents.run_copies import copy_resources, writable_folders

CORE = "python_core"
ENTRY = Path(CORE) / "main.py"
CONFIG = "config.toml"
RESOURCES = ("AGENTS.md", CONFIG, "skills", "hooks")
PLUGIN_CACHE = Path("plugins") / "cache"
BINARY_KEYS = ("cli_path", "codex_path", "codex_linux_sandbox_exe", "zsh_path")
"""Keys that would point the run at a binary of its own: the Python core is the only path."""
CONNECTION_KEYS = ("model", "model_provider", "model_providers", "profile", "profiles")
"""Connection settings come from the role config (`llm`) only."""


def home_problems(files_dir: Path) -> list[str]:
    """What in the snapshot the adapter refuses, one line each naming the file and key."""
    if not (files_dir / ENTRY).is_file():
        return [f"{files_dir}: the snapshot has no {ENTRY}: a Codex harness runs its own core"]
    if (files_dir / CORE).is_symlink():
        return [f"{CORE}: a symlink; the core is copied from the snapshot, never from the host"]
    config = _read_config(files_dir / CONFIG)
    if isinstance(config, str):
        return [config]
    problems = [
        f"{CONFIG}: {key}: refused: the Codex adapter runs only the snapshot's python_core/ "
        "and never a native Codex CLI or other binary"
        for key in _keys(config)
        if key.rsplit(".", 1)[-1] in BINARY_KEYS
    ]
    problems += [
        f"{CONFIG}: {key}: refused: connection settings come from the role config (llm)"
        for key in config
        if key in CONNECTION_KEYS
    ]
    for name in enabled_plugins(config):
        if _linked(files_dir, PLUGIN_CACHE / name):
            problems.append(
                f"{PLUGIN_CACHE}/{name}: a symlink on the way; a plugin is copied from the "
                "snapshot, never from the host"
            )
        elif not (files_dir / PLUGIN_CACHE / name).is_dir():
            problems.append(
                f"{CONFIG}: plugins.{name}: enabled but not installed under {PLUGIN_CACHE}/{name}"
            )
    return problems


def enabled_plugins(config: dict[str, Any]) -> list[str]:
    plugins = config.get("plugins")
    if not isinstance(plugins, dict):
        return []
    return [
        name
        for name, entry in plugins.items()
        if isinstance(entry, dict) and entry.get("enabled") is True and _plain_name(name)
    ]


def build_home(files_dir: Path, home: Path) -> None:
    """Copy the core, the resources and the enabled plugins into `home` (a new folder)."""
    home.mkdir()
    shutil.copytree(files_dir / CORE, home / CORE, symlinks=True, ignore=_no_bytecode)
    copy_resources(files_dir, home, RESOURCES)
    config = _read_config(files_dir / CONFIG)
    for name in enabled_plugins(config if isinstance(config, dict) else {}):
        shutil.copytree(files_dir / PLUGIN_CACHE / name, home / PLUGIN_CACHE / name, symlinks=True)
    writable_folders(home)


def _linked(root: Path, relative: Path) -> bool:
    """A folder on the way from `root` to `root/relative` is a link: copying it (the copy
    follows the top folder's link) would read host files into the run's home."""
    path = root
    for part in relative.parts:
        path = path / part
        if path.is_symlink():
            return True
    return False


def _read_config(path: Path) -> dict[str, Any] | str:
    if path.is_symlink():  # read on the host: never through a link out of the snapshot
        return f"{CONFIG}: a symlink; the snapshot's config must be a plain file"
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return f"{CONFIG}: not valid TOML: {exc}"


def _keys(table: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in table.items():
        yield prefix + key
        if isinstance(value, dict):
            yield from _keys(value, f"{prefix}{key}.")


def _plain_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..")


def _no_bytecode(folder: str, names: list[str]) -> list[str]:
    return [name for name in names if name == "__pycache__"]
