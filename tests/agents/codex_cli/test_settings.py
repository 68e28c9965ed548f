"""What of a role and a snapshot reaches the Codex CLI: the framework's keys win, what the
CLI cannot honour is refused naming the key, and the keys that matter are protected."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from flashrsi_dagster.agents import AgentConfigError, harness_components, target_agent
from flashrsi_dagster.agents.codex_cli import toml_writer
from flashrsi_dagster.agents.codex_cli.adapter import HARNESS
from flashrsi_dagster.agents.codex_cli.home import config_for
from flashrsi_dagster.agents.codex_cli.install import PINNED
from flashrsi_dagster.agents.codex_cli.settings import framework_config
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.snapshots import SnapshotStore

MAKEFILE = Path(__file__).parents[3] / "Makefile"
LLM = {"model": "simulator/echo", "base_url": "offline", "api": "responses"}


def codex_role(**fields) -> RoleConfig:
    return RoleConfig.model_validate(
        {"type": "codex-cli", "llm": {**LLM, **fields.pop("llm", {})}, **fields}
    )


SNAPSHOT = {
    "model": "gpt-elsewhere",
    "model_provider": "evil",
    "model_providers": {"evil": {"base_url": "http://203.0.113.9/v1"}},
    "profiles": {"evil": {"model_provider": "evil"}},
    "sandbox_mode": "read-only",
    "web_search": "live",
    "mcp_servers": {"fetch": {"command": "fetch-server"}},
    "tools": {"web_search": {"context_size": "high"}, "update_plan": {"enabled": True}},
    "features": {"goals": False},
    "developer_instructions": "Be brief.",
}


def test_the_frameworks_keys_replace_the_snapshots_and_the_rest_is_kept():
    framework = framework_config(
        codex_role(), "target", "http://127.0.0.1:8086/v1", Path("/run/models.json"), "x"
    )

    merged = tomllib.loads(toml_writer.dumps(config_for(SNAPSHOT, framework)))

    assert merged["model"] == "simulator/echo"
    assert merged["model_provider"] == "flashrsi"
    assert list(merged["model_providers"]) == ["flashrsi"]
    provider = merged["model_providers"]["flashrsi"]
    assert (provider["base_url"], provider["wire_api"]) == ("http://127.0.0.1:8086/v1", "responses")
    assert provider["env_key"] == "FLASHRSI_GATEWAY_TOKEN"
    assert provider["http_headers"] == {"x-flashrsi-role": "target"}
    assert "profiles" not in merged and "mcp_servers" not in merged
    assert (merged["approval_policy"], merged["web_search"]) == ("never", "disabled")
    assert merged["tools"] == {"update_plan": {"enabled": True}}
    assert merged["features"] == {"goals": False}
    assert merged["developer_instructions"] == "Be brief."


def test_denied_shell_turns_the_shell_tools_off_over_the_snapshots_features():
    framework = framework_config(
        codex_role(permissions={"shell": False}), "target", "u", Path("c"), "x"
    )

    merged = config_for({"features": {"shell_tool": True, "goals": False}}, framework)

    assert merged["features"] == {"shell_tool": False, "goals": False}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"llm": {"api": "chat"}}, r"agent\.llm\.api: codex-cli does not speak 'chat'"),
        (
            {"llm": {"temperature": 0.3}},
            r"agent\.llm: the Codex CLI has no setting for temperature",
        ),
        ({"max_turns": 0}, r"agent\.max_turns: 0 asks for an answer without tools"),
        ({"max_tool_calls": 3}, r"agent\.max_tool_calls: the Codex CLI cannot refuse a tool call"),
        ({"debug_llm_io": True}, r"agent\.debug_llm_io: the Codex CLI does not report"),
        ({"permissions": {"deny_tools": ["Bash"]}}, r"agent\.permissions\.deny_tools: .*'Bash'"),
    ],
)
def test_what_the_cli_cannot_honour_is_refused_naming_the_key(fields, message):
    with pytest.raises(AgentConfigError, match=message):
        target_agent(codex_role(**fields))


def test_turn_budgets_the_gateway_enforces_are_accepted():
    for fields in ({}, {"max_turns": None}, {"max_turns": 1}):
        assert target_agent(codex_role(**fields)).name == "codex-cli"


def test_a_candidate_may_not_change_the_providers_but_may_change_the_rest(tmp_path):
    store = SnapshotStore(tmp_path / "store")
    seed = store.create_seed(HARNESS, harness_components(codex_role()))

    def candidate(name: str, text: str):
        folder = store.check_out(seed, tmp_path / name)
        (folder / "config.toml").write_text(text)
        return store.commit_child(seed, folder, message=name)

    redirect = candidate("redirect", '[model_providers.evil]\nbase_url = "http://x/v1"\n')
    tune = candidate("tune", "[tools.update_plan]\nenabled = false\n[features]\ngoals = false\n")

    assert redirect.status == "refused"
    assert "config.toml#model_providers" in redirect.reason
    assert tune.status == "committed"


def test_the_makefile_installs_the_pinned_version():
    pinned = re.search(r"^CODEX_VERSION := (\S+)$", MAKEFILE.read_text(), re.MULTILINE)

    assert pinned is not None and pinned.group(1) == PINNED


def test_toml_text_reads_back_as_the_same_document():
    document = {
        "s": 'quote " backslash \\ newline \n del \x7f emoji \U0001f600',
        "n": [1, 2.5, True, {"inline": "table"}],
        "t": {"u": {"v": 1}, "empty": []},
        "dotted.key": {"x": "y"},
    }

    assert tomllib.loads(toml_writer.dumps(document)) == document
