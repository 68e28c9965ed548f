"""The per-run temporary folder: the CLI's state and temp files, and the snapshot as a plugin."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from flashrsi_dagster.agents.claude_code.processes import stop_processes
from flashrsi_dagster.agents.run_copies import copy_resources, writable_folders
from flashrsi_dagster.scratch import mkdtemp

logger = logging.getLogger("flashrsi.agents.claude_code")

PLUGIN_NAME = "harness"
"""Plugin skills and agents are named `harness:<name>` in the session (unless the snapshot's
own manifest names the plugin otherwise)."""
PLUGIN_PARTS = ("skills", "agents", "hooks", "mcp")
"""Copied into the plugin folder; `mcp/` holds the code of the snapshot's stdio MCP servers."""
MANIFEST = ".claude-plugin/plugin.json"
"""Where a plugin keeps its manifest, in the snapshot as in the run's plugin folder."""


@dataclass(frozen=True)
class RunDir:
    """One run's private folder (mode 0700), outside the snapshot, removed when the run ends::

    <scratch folder>/claude-XXXXXXXX/   (see flashrsi_dagster.scratch)
      config/                     CLAUDE_CONFIG_DIR: sessions, transcripts, CLI state, and
        api-key                   the run's gateway token, read by the CLI's `apiKeyHelper`
      tmp/                        CLAUDE_CODE_TMPDIR: task output files, sockets
      plugin/                     the snapshot's extensions as one local plugin
        .claude-plugin/plugin.json  the snapshot's own manifest, when it has one; else generated
        skills/ agents/ hooks/ mcp/  copies of the snapshot's folders, when present
      claude-in-jail              the launcher that starts the CLI inside the run's jail (never
                                  visible inside it: it runs as root on the host)
    """

    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def plugin(self) -> Path:
        return self.root / "plugin"

    @property
    def key_file(self) -> Path:
        return self.config / "api-key"

    @property
    def marker(self) -> bytes:
        """The environment entry that every process of this run inherits."""
        return f"CLAUDE_CONFIG_DIR={self.config}".encode()


@contextmanager
def run_dir(files_dir: Path) -> Iterator[RunDir]:
    """A fresh `RunDir` for one run; on exit its processes are stopped and the folder removed."""
    run = RunDir(mkdtemp("claude-"))
    try:
        run.config.mkdir()
        run.tmp.mkdir()
        _build_plugin(files_dir, run.plugin)
        yield run
    finally:
        # A process still running would keep writing into the folder being removed.
        stop_processes(run.marker)
        shutil.rmtree(run.root, onexc=_leftover)


def _build_plugin(files_dir: Path, plugin: Path) -> None:
    """Copies, not links: nothing the session does can write into the snapshot. The snapshot's
    own manifest is used as it is (the CLI reports a malformed one); without one, a manifest
    naming the plugin `harness` is written."""
    manifest = plugin / MANIFEST
    manifest.parent.mkdir(parents=True)
    own = files_dir / MANIFEST
    linked = own.is_symlink() or own.parent.is_symlink()
    if own.is_file() and not linked:  # evolvable: never a link out of the snapshot
        shutil.copyfile(own, manifest, follow_symlinks=False)
    else:
        manifest.write_text(
            json.dumps(
                {
                    "name": PLUGIN_NAME,
                    "version": "0.0.0",
                    "description": "The FlashRSI snapshot's skills, sub-agents and hooks.",
                }
            ),
            encoding="utf-8",
        )
    copy_resources(files_dir, plugin, PLUGIN_PARTS, folders_only=True)
    writable_folders(plugin)


def _leftover(function, path: str, error: BaseException) -> None:
    """Cleanup is best effort: a file that cannot be removed must not cost the run's result."""
    logger.warning("could not remove %s from a Claude Code run folder: %s", path, error)
