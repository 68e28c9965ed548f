"""`llm.auth: login`: the native Claude login is read from where the CLI keeps it, only for a
role that asks, and reaches the endpoint through the gateway; the jail never sees it."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.agents.claude_code.login import (
    LoginError,
    credentials_path,
    login_token,
)
from flashrsi_dagster.environments.confinement import KEY_REFUSED
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from tests.agents.claude_code.conftest import call, role

TOKEN = "sk-ant-oat01-login-canary-4c1d9e7f2b3a"
_watched: set[str] = set()
_opened: list[str] = []


def _watch_opens(event: str, args: tuple) -> None:
    if event == "open" and _watched and str(args[0]) in _watched:
        _opened.append(str(args[0]))


sys.addaudithook(_watch_opens)  # cannot be removed: it notes opens of watched paths only


@pytest.fixture
def credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A planted login where the CLI keeps it (`$CLAUDE_CONFIG_DIR/.credentials.json`)."""
    folder = tmp_path / "claude-home"
    folder.mkdir()
    path = folder / ".credentials.json"
    expires = int((time.time() + 3600) * 1000)
    path.write_text(json.dumps({"claudeAiOauth": {"accessToken": TOKEN, "expiresAt": expires}}))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    _watched.add(str(path))
    yield path
    _watched.discard(str(path))


@pytest.fixture
def login_server() -> Iterator[OfflineModelServer]:
    """An endpoint that accepts only the login's token, as the real one would."""
    with OfflineModelServer(ServerConfig(accepted_keys=(TOKEN,))) as running:
        yield running


def test_a_key_role_never_reads_the_login_and_a_login_role_uses_it(login_server, credentials, work):
    script = [
        call("Bash", command=f"env > env.txt; cat {credentials} > seen.txt 2>&1"),
        "done",
    ]
    login_server.add_script("key", script)
    login_server.add_script("login", script)
    _opened.clear()
    with target_agent(role(login_server, "key")) as agent:
        keyed = agent.run(work, "work", task_id="t")

    assert str(credentials) not in _opened
    assert (keyed.status, keyed.error.type) == ("infra_error", KEY_REFUSED)

    with target_agent(role(login_server, "login", llm={"auth": "login"})) as agent:
        logged_in = agent.run(work, "work", task_id="t")

    assert str(credentials) in _opened
    assert logged_in.status == "success", logged_in.error  # the endpoint took the token
    assert TOKEN not in (work / "env.txt").read_text()
    assert "No such file or directory" in (work / "seen.txt").read_text()  # not in the jail
    assert TOKEN not in logged_in.model_dump_json()


def test_the_login_lives_in_claude_config_dir_or_the_home_folder():
    assert credentials_path({"CLAUDE_CONFIG_DIR": "/x"}) == Path("/x/.credentials.json")
    assert credentials_path({}) == Path.home() / ".claude" / ".credentials.json"


def test_a_missing_or_expired_login_is_an_error_trajectory_asking_to_log_in(
    server, credentials, work
):
    expired = {"claudeAiOauth": {"accessToken": TOKEN, "expiresAt": 1000}}
    credentials.write_text(json.dumps(expired))
    with target_agent(role(server, "unused", llm={"auth": "login"})) as agent:
        trajectory = agent.run(work, "work", task_id="t")

    assert trajectory.error.type == "LoginError"
    assert "has expired; log in with the Claude Code CLI" in trajectory.error.message
    with pytest.raises(LoginError, match="no Claude login at"):
        login_token(credentials.with_name("absent.json"))
