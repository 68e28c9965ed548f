"""The snapshot's MCP servers and settings, read explicitly (never through the CLI's discovery
of user and project files), and the framework's settings laid over them.

A snapshot may hold `.mcp.json` (`{"mcpServers": {...}}`, the CLI's own format) and
`settings.json` (the CLI's settings format); both are evaluator-protected
(`ClaudeCode.protected`). `${CLAUDE_PLUGIN_ROOT}` in `.mcp.json` names the run's copy of the
snapshot's extensions (the plugin folder, holding `mcp/` beside `skills/`, `agents/`, `hooks/`),
so a stdio server's code ships in the snapshot and runs inside the jail as a child of the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

MCP_CONFIG = ".mcp.json"
SETTINGS = "settings.json"
PLUGIN_ROOT = "${CLAUDE_PLUGIN_ROOT}"

# Settings the framework decides whatever the snapshot says: the credentials and the endpoint,
# the model, and what would switch off the framework's own hooks or permission mode.
_FRAMEWORK_KEYS = (
    "apiKeyHelper",
    "model",
    "availableModels",
    "forceLoginMethod",
    "forceLoginOrgUUID",
    "awsAuthRefresh",
    "awsCredentialExport",
    "otelHeadersHelper",
    "disableAllHooks",
    "allowManagedHooksOnly",
)
_FRAMEWORK_PERMISSION_KEYS = ("defaultMode", "disableBypassPermissionsMode")


class ExtensionLoadError(Exception):
    """A snapshot's extension (MCP servers, settings, plugin, hooks) that cannot be loaded:
    the run ends as an error trajectory naming the file, before or as the session starts."""


def read_object(path: Path, what: str) -> dict[str, Any] | None:
    """The JSON object in `path` (None when the file is absent), or `ExtensionLoadError`."""
    if not path.is_file() or path.is_symlink():  # never followed out of the snapshot
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExtensionLoadError(f"{what} {path.name}: not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ExtensionLoadError(f"{what} {path.name}: expected a JSON object")
    return value


def mcp_servers(files_dir: Path, plugin: Path) -> dict[str, Any]:
    """The snapshot's `.mcp.json` servers, `${CLAUDE_PLUGIN_ROOT}` pointing at `plugin`."""
    config = read_object(files_dir / MCP_CONFIG, "the snapshot's MCP config")
    if config is None:
        return {}
    servers = config.get("mcpServers")
    if not isinstance(servers, dict) or not all(isinstance(s, dict) for s in servers.values()):
        raise ExtensionLoadError(
            f"the snapshot's MCP config {MCP_CONFIG}: mcpServers must map names to server objects"
        )
    text = json.dumps(servers).replace(PLUGIN_ROOT, str(plugin))
    return json.loads(text)


def session_settings(
    files_dir: Path, framework: dict[str, Any], framework_env: Iterable[str]
) -> dict[str, Any]:
    """The snapshot's `settings.json` with the framework's keys over it: `framework` wins,
    the framework's own keys are dropped from the snapshot's, and so are the snapshot's
    `env` entries that the framework sets (`framework_env`) or that choose the endpoint."""
    settings = read_object(files_dir / SETTINGS, "the snapshot's settings") or {}
    for key in _FRAMEWORK_KEYS:
        settings.pop(key, None)
    permissions = settings.get("permissions")
    if isinstance(permissions, dict):
        for key in _FRAMEWORK_PERMISSION_KEYS:
            permissions.pop(key, None)
    env = settings.get("env")
    if isinstance(env, dict):
        owned = set(framework_env)
        settings["env"] = {
            name: value
            for name, value in env.items()
            if name not in owned and not name.startswith(("ANTHROPIC_", "CLAUDE_CODE_USE_"))
        }
    return {**settings, **framework}


def check_plugin(plugin: Path) -> None:
    """The plugin's manifest and hook config parse: refused here, naming the file, before a
    CLI starts on a harness that is not what its snapshot says."""
    read_object(plugin / ".claude-plugin" / "plugin.json", "the snapshot's plugin manifest")
    read_object(plugin / "hooks" / "hooks.json", "the snapshot's hook config")
