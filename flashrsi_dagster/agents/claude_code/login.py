"""`llm.auth: login`: the Claude login a user made with the CLI, used by a role that asks for it.

The credentials are read from where the CLI keeps them — `$CLAUDE_CONFIG_DIR/.credentials.json`,
else `~/.claude/.credentials.json` (macOS keeps them in the Keychain, which is not read) — and
only for such a role, when its run starts; a `key` role never opens the file. The access token
goes to the model gateway as the run's upstream credential (a Bearer token with Anthropic's
OAuth beta header), so the jail, the CLI and every record see only the run's gateway token, as
with a key. The framework does not refresh a login: an expired one is an error asking the user
to log in again with the CLI.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.environments.confinement import upstream_of
from flashrsi_dagster.gateway import Upstream

CREDENTIALS = ".credentials.json"


class LoginError(Exception):
    """The native login is missing, unreadable or expired: the run is an error trajectory."""


def credentials_path(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    folder = environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
    return Path(folder) / CREDENTIALS


def login_token(path: Path, now: float | None = None) -> str:
    """The OAuth access token in the CLI's credentials file at `path`."""
    hint = "log in with the Claude Code CLI (`claude`, then /login), or set llm.auth: key"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LoginError(f"llm.auth: login: no Claude login at {path}; {hint}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LoginError(f"llm.auth: login: cannot read {path}: {type(exc).__name__}") from None
    oauth = data.get("claudeAiOauth") if isinstance(data, dict) else None
    token = oauth.get("accessToken") if isinstance(oauth, dict) else None
    if not isinstance(token, str) or not token:
        raise LoginError(f"llm.auth: login: {path} holds no claudeAiOauth.accessToken; {hint}")
    expires = oauth.get("expiresAt")  # milliseconds since the epoch
    if isinstance(expires, int | float) and expires / 1000 <= (now or time.time()):
        raise LoginError(f"llm.auth: login: the Claude login in {path} has expired; {hint}")
    return token


def login_upstream(llm: LLMConfig, token: str) -> Upstream:
    """The role's upstream with the login's token in place of a key."""
    return dataclasses.replace(upstream_of(llm), key=token, oauth=True)
