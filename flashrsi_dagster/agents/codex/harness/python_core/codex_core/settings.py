"""`config.toml` in the run's home: the model settings, features, limits and plugin switches
the core reads. Connection settings (model, endpoint, key) come from the role config only."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

FILE = "config.toml"
FEATURES = {"shell_snapshot": True, "apply_patch": True, "update_plan": True, "hooks": True}
KNOWN = {"project_doc_max_bytes", "parallel_tool_calls", "features", "limits", "plugins"}
REFUSED = {
    "cli_path": "the Codex adapter runs only the snapshot's python_core/, never a native CLI",
    "model": "the model comes from the role config (llm.model)",
    "model_provider": "the endpoint comes from the role config (llm.base_url)",
    "model_providers": "the endpoint comes from the role config (llm.base_url)",
    "profile": "profiles are not read: the role config is the only profile",
    "profiles": "profiles are not read: the role config is the only profile",
}
NOT_PORTED = {
    "mcp_servers": "MCP servers",
    "rules": "the `rules` execution policy",
    "sandbox_mode": "Codex's own sandbox modes (every run is in the framework's jail)",
    "sandbox_workspace_write": "Codex's own sandbox modes (every run is in the framework's jail)",
    "approval_policy": "approval policies (nothing asks for approval)",
    "agents": "sub-agents",
    "tools": "extra built-in tools (web search, image view)",
    "notify": "notifications",
    "history": "session history and memory",
}


class SettingsError(ValueError):
    """A config.toml the core cannot honour; the message names the key."""


@dataclass(frozen=True)
class Settings:
    features: dict[str, bool] = field(default_factory=lambda: dict(FEATURES))
    shell_timeout: float = 120.0
    output_limit: int = 20_000
    project_doc_max_bytes: int = 32 * 1024
    parallel_tool_calls: bool = False
    plugins: tuple[str, ...] = ()
    """Plugins enabled with `[plugins.<name>] enabled = true`."""


def load(home: Path) -> Settings:
    path = home / FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{FILE}: not valid TOML: {exc}") from None
    for key in data:
        if key in REFUSED:
            raise SettingsError(f"{FILE}: {key}: refused: {REFUSED[key]}")
        if key in NOT_PORTED:
            raise SettingsError(f"{FILE}: {key}: {NOT_PORTED[key]} not ported to the Python core")
        if key not in KNOWN:
            raise SettingsError(f"{FILE}: {key}: unknown key; known: {', '.join(sorted(KNOWN))}")
    features = {**FEATURES, **_table(data, "features", bool)}
    limits = _table(data, "limits", (int, float))
    plugins = data.get("plugins", {})
    enabled = tuple(
        name for name, entry in plugins.items() if isinstance(entry, dict) and entry.get("enabled")
    )
    return Settings(
        features=features,
        shell_timeout=float(limits.get("shell_timeout", 120.0)),
        output_limit=int(limits.get("output_limit", 20_000)),
        project_doc_max_bytes=int(data.get("project_doc_max_bytes", 32 * 1024)),
        parallel_tool_calls=bool(data.get("parallel_tool_calls", False)),
        plugins=enabled,
    )


def _table(data: dict, name: str, kind) -> dict:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise SettingsError(f"{FILE}: {name}: expected a table")
    for key, value in table.items():
        if not isinstance(value, kind) or isinstance(value, bool) is not (kind is bool):
            raise SettingsError(
                f"{FILE}: {name}.{key}: expected a {getattr(kind, '__name__', 'number')}"
            )
    return table
