"""Where a role's requests go: its `base_url`, or the offline model simulator for `offline`."""

from __future__ import annotations

import atexit
import threading

from flashrsi_dagster.config.models import LLMConfig

OFFLINE = "offline"

_lock = threading.Lock()
_server = None


def offline_server(settings=None):
    """The process's shared offline model simulator, started on first use (with `settings`,
    a `ServerConfig`, when given; a running server is shared as it is)."""
    global _server
    with _lock:
        if _server is None:
            from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig

            _server = OfflineModelServer(settings or ServerConfig()).__enter__()
        return _server


atexit.register(lambda: stop_offline_server())


def offline_server_running() -> bool:
    return _server is not None


def stop_offline_server() -> None:
    global _server
    with _lock:
        if _server is not None:
            _server.__exit__(None, None, None)
            _server = None


def uses_offline(*roles: LLMConfig) -> bool:
    return any(llm.base_url == OFFLINE for llm in roles)


def openai_base_url(llm: LLMConfig) -> str | None:
    """The OpenAI-style base URL (ending in /v1) for the role, None for the SDK default."""
    return offline_server().url if llm.base_url == OFFLINE else llm.base_url


def anthropic_base_url(llm: LLMConfig) -> str:
    """The Anthropic-style root URL (without /v1) for the role."""
    if llm.base_url == OFFLINE:
        return offline_server().root_url
    return (llm.base_url or "https://api.anthropic.com").rstrip("/").removesuffix("/v1")
