"""`simulator/echo`: answers with the last user text, a smoke test for any client."""

from __future__ import annotations

from flashrsi_dagster.offline_model.conversation import Conversation, Reply


def echo(conversation: Conversation) -> Reply:
    return Reply(text=conversation.last_user_text())
