"""One run's private folder: `CODEX_HOME` with the snapshot's resources and the framework's
config, plus the host-side files of the run (its prompt, event stream and stderr)::

    <scratch folder>/codex-XXXXXXXX/   (see flashrsi_dagster.scratch), removed after the run
      home/                 CODEX_HOME, the only folder of it the jail sees (writable): the
        config.toml         snapshot's config.toml with the framework's keys (`FRAMEWORK_KEYS`)
        models.json         the model catalog: the role's model and the tools it is offered
        AGENTS.md skills/ hooks/ hooks.json   copies of the snapshot's, when present
        sessions/ *.sqlite  what the CLI writes during the run
      prompt                the instruction, the CLI's stdin
      events.jsonl          its `--json` stdout
      stderr.log            its stderr
"""

from __future__ import annotations

import logging
import shutil
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flashrsi_dagster.agents.codex_cli import toml_writer
from flashrsi_dagster.agents.run_copies import copy_resources, writable_folders
from flashrsi_dagster.scratch import mkdtemp

logger = logging.getLogger("flashrsi.agents.codex_cli")

CONFIG = "config.toml"
RESOURCES = ("AGENTS.md", "skills", "hooks", "hooks.json")
"""The snapshot's evolvable resources the CLI reads from `CODEX_HOME` (with `config.toml`)."""
PROVIDER = "flashrsi"
TOKEN_ENV = "FLASHRSI_GATEWAY_TOKEN"
"""Holds the run's gateway token (worthless outside its jail) for the provider's `env_key`."""

FRAMEWORK_KEYS = (
    # Where model calls go, with which model and credentials.
    "model",
    "model_provider",
    "model_providers",
    "model_catalog_json",
    "model_reasoning_effort",
    "openai_base_url",
    "chatgpt_base_url",
    "oss_provider",
    "forced_login_method",
    "profile",
    "profiles",
    # The trust store: a trusted project's `.codex/config.toml` (the task's working folder,
    # which the task or the run writes) is a config layer above this file, over every key here.
    "projects",
    # What the agent may do: sandbox, approvals, permission profiles, the shell's environment.
    "sandbox_mode",
    "sandbox_workspace_write",
    "approval_policy",
    "approvals_reviewer",
    "default_permissions",
    "permissions",
    "shell_environment_policy",
    # Tools that reach the network or start servers: hosted web search, MCP servers.
    "web_search",
    "mcp_servers",
    # Traffic beside the model's: telemetry, update checks.
    "otel",
    "analytics",
    "check_for_update_on_startup",
)
"""Top-level `config.toml` keys the framework sets (or removes) whatever the snapshot says:
they choose the provider and model, raise budgets, grant permissions or open the network.
They are also evaluator-protected (`CodexCLI.protected`)."""


class SnapshotConfigError(ValueError):
    """The snapshot's `config.toml` cannot be read: the message names the file."""


@dataclass(frozen=True)
class RunHome:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def catalog(self) -> Path:
        return self.home / "models.json"

    @property
    def has_hooks(self) -> bool:
        return (self.home / "hooks").is_dir() or (self.home / "hooks.json").is_file()

    @property
    def prompt(self) -> Path:
        return self.root / "prompt"

    @property
    def events(self) -> Path:
        return self.root / "events.jsonl"

    @property
    def stderr(self) -> Path:
        return self.root / "stderr.log"


@contextmanager
def run_home(files_dir: Path) -> Iterator[RunHome]:
    """A fresh `RunHome` holding copies of the snapshot's resources; removed on exit."""
    run = RunHome(mkdtemp("codex-"))
    try:
        run.home.mkdir()
        # Copies, not links: nothing the run does can write into the snapshot.
        copy_resources(files_dir, run.home, RESOURCES)
        writable_folders(run.home)
        yield run
    finally:
        shutil.rmtree(run.root, onexc=_leftover)


def snapshot_config(files_dir: Path) -> dict[str, Any]:
    """The snapshot's `config.toml` as a table ({} without one)."""
    path = files_dir / CONFIG
    if not path.is_file() or path.is_symlink():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SnapshotConfigError(f"{path}: not valid TOML: {exc}") from None


FRAMEWORK_SUBKEYS = (("tools", "web_search"),)
"""Keys inside snapshot tables that are the framework's (the hosted web search's settings)."""


def write_config(run: RunHome, snapshot: dict[str, Any], framework: dict[str, Any]) -> None:
    """The snapshot's table without the framework's keys, deep-merged with the framework's."""
    (run.home / CONFIG).write_text(toml_writer.dumps(config_for(snapshot, framework)), "utf-8")


def config_for(snapshot: dict[str, Any], framework: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in snapshot.items() if k not in FRAMEWORK_KEYS}
    for table, name in FRAMEWORK_SUBKEYS:
        if isinstance(kept.get(table), dict):
            kept[table] = {k: v for k, v in kept[table].items() if k != name}
    return merge(kept, framework)


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` wins on every key it names; tables it shares with `base` are merged."""
    merged = dict(base)
    for name, value in over.items():
        old = merged.get(name)
        both = isinstance(old, dict) and isinstance(value, dict)
        merged[name] = merge(old, value) if both else value
    return merged


def _leftover(function, path: str, error: BaseException) -> None:
    """Cleanup is best effort: a file that cannot be removed must not cost the run's result."""
    logger.warning("could not remove %s from a Codex CLI run folder: %s", path, error)
