"""The role config, and only the role config, decides how the CLI runs."""

from __future__ import annotations

import json

import pytest

from flashrsi_dagster.agents.claude_code.limits import ToolBudget
from flashrsi_dagster.agents.claude_code.options import SessionFiles, agent_options, cli_env
from flashrsi_dagster.agents.claude_code.run_dir import RunDir
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.environments.confinement import AgentRun

UNJAILED = AgentRun(token="t", base_url="http://127.0.0.1:8086", jail=None, env={})

PARENT = {
    "PATH": "/usr/bin",
    "MY_SERVICE_API_KEY": "parent-secret-value",
    "ANTHROPIC_API_KEY": "parent-anthropic-key",
    "ANTHROPIC_MODEL": "claude-some-other-model",
    "CLAUDE_CODE_USE_BEDROCK": "1",
}


def _role(role: dict | None = None, **llm) -> RoleConfig:
    fields = {"model": "m-1", "base_url": "http://127.0.0.1:9", "api": "anthropic", **llm}
    return RoleConfig.model_validate(
        {"type": "claude-code", "llm": fields, "max_turns": 7, **(role or {})}
    )


def _options(config: RoleConfig, tmp_path, work, append: str | None, snapshot=None):
    """Options for a snapshot (default: an empty one) and a plugin folder in `tmp_path`."""
    snapshot = snapshot or tmp_path / "snapshot"
    snapshot.mkdir(exist_ok=True)
    session = SessionFiles(snapshot, work, "target", append)
    budget = ToolBudget(config.max_tool_calls)
    return agent_options(config, RunDir(tmp_path), session, print, UNJAILED, budget)


def test_the_cli_environment_blanks_the_parents_secrets_and_routing(tmp_path):
    llm = _role(max_retries=3, timeout=30, max_tokens=500).llm

    env = cli_env(llm, RunDir(tmp_path), "worker", PARENT, base_url="http://127.0.0.1:8086")

    assert "PATH" not in env  # inherited unchanged
    for name in ("MY_SERVICE_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL"):
        assert env[name] == ""
    assert env["CLAUDE_CODE_USE_BEDROCK"] == ""
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8086"  # the gateway, never the endpoint
    assert env["ANTHROPIC_CUSTOM_HEADERS"] == "x-flashrsi-role: worker"
    assert (env["CLAUDE_CONFIG_DIR"], env["CLAUDE_CODE_TMPDIR"]) == (
        str(tmp_path / "config"),
        str(tmp_path / "tmp"),
    )
    pins = ["ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL"]
    assert {env[name] for name in [*pins, "CLAUDE_CODE_SUBAGENT_MODEL"]} == {"m-1"}
    limits = ["CLAUDE_CODE_MAX_RETRIES", "API_TIMEOUT_MS", "CLAUDE_CODE_MAX_OUTPUT_TOKENS"]
    assert [env[name] for name in limits] == ["3", "30000", "500"]


def test_options_are_the_preset_the_plugin_and_no_implicit_settings(tmp_path):
    config = _role(reasoning={"budget_tokens": 2048, "effort": "low"})

    options = _options(config, tmp_path, tmp_path / "work", None)

    assert options.system_prompt == {"type": "preset", "preset": "claude_code"}
    assert options.setting_sources == []
    assert options.plugins == [{"type": "local", "path": str(tmp_path / "plugin")}]
    assert (options.cwd, options.model, options.max_turns) == (str(tmp_path / "work"), "m-1", 7)
    assert options.permission_mode == "bypassPermissions"
    assert (options.thinking, options.effort) == ({"type": "enabled", "budget_tokens": 2048}, "low")
    assert str(tmp_path / "config" / "api-key") in json.loads(options.settings)["apiKeyHelper"]


def test_claude_md_text_is_appended_to_the_preset(tmp_path):
    options = _options(_role(), tmp_path, tmp_path, "Be terse.\n")

    assert options.system_prompt["append"] == "Be terse.\n"
    assert options.thinking == {"type": "disabled"}


@pytest.mark.parametrize(
    ("max_turns", "turns", "tools"), [(None, None, None), (0, 1, []), (3, 3, None)]
)
def test_max_turns_none_is_unset_and_zero_offers_no_tool(tmp_path, max_turns, turns, tools):
    options = _options(_role({"max_turns": max_turns}), tmp_path, tmp_path, None)

    assert (options.max_turns, options.tools) == (turns, tools)


def test_permissions_become_disallowed_tools(tmp_path):
    permissions = {"shell": False, "edit": False, "deny_tools": ["WebFetch", "Bash"]}
    options = _options(_role({"permissions": permissions}), tmp_path, tmp_path, None)

    assert options.disallowed_tools == [
        "Bash", "Monitor", "Edit", "Write", "NotebookEdit", "WebFetch"
    ]  # fmt: skip
    assert _options(_role(), tmp_path, tmp_path, None).disallowed_tools == []


def test_the_snapshots_settings_load_under_the_frameworks_keys(tmp_path):
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    env = {"GREETING": "hi", "ANTHROPIC_BASE_URL": "http://elsewhere", "DISABLE_TELEMETRY": "0"}
    settings = {
        "apiKeyHelper": "echo stolen",
        "model": "claude-opus",
        "permissions": {"deny": ["Read"], "defaultMode": "plan"},
        "env": env,
    }
    (snapshot / "settings.json").write_text(json.dumps(settings))

    settings = json.loads(_options(_role(), tmp_path, tmp_path, None, snapshot).settings)

    assert settings["permissions"] == {"deny": ["Read"]}
    assert settings["env"] == {"GREETING": "hi"}
    assert "model" not in settings
    assert str(tmp_path / "config" / "api-key") in settings["apiKeyHelper"]
