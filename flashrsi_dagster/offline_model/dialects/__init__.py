"""Wire dialects of the offline model simulator, by the path they are served on."""

from flashrsi_dagster.offline_model.dialects import anthropic, openai_chat, openai_responses
from flashrsi_dagster.offline_model.dialects.base import Dialect, Turn

# Paths without the `/v1` prefix: the server accepts both forms.
BY_PATH: dict[str, Dialect] = {
    "/chat/completions": openai_chat,
    "/responses": openai_responses,
    "/messages": anthropic,
}

__all__ = ["BY_PATH", "Dialect", "Turn", "anthropic", "openai_chat", "openai_responses"]
