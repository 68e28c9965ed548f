"""The endpoints the gateway forwards; anything else is a 404 (a real key can do far more than
a run needs: files, fine-tunes, batches, admin)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.message import Message

from flashrsi_dagster.gateway.errors import Dialect
from flashrsi_dagster.gateway.grants import Family
from flashrsi_dagster.gateway.metering import Kind


@dataclass(frozen=True)
class Route:
    kind: Kind | None
    """The model call it is, metered and capped; None for the free endpoints."""
    family: Family | None
    """The upstream API family it needs; None: either."""
    web: bool = False
    """A web fetch the gateway serves itself (`gateway/web.py`), for runs granted the web."""


ROUTES = {
    ("POST", "/v1/chat/completions"): Route("chat", "openai"),
    ("POST", "/v1/responses"): Route("responses", "openai"),
    ("POST", "/v1/messages"): Route("messages", "anthropic"),
    ("POST", "/v1/messages/count_tokens"): Route(None, "anthropic"),
    ("GET", "/v1/models"): Route(None, None),
    ("POST", "/v1/web/fetch"): Route(None, None, web=True),
}
_MODEL = Route(None, None)  # GET /v1/models/<id>
# Model ids may hold slashes ("org/model"), never a dot segment or an escape: "../files" must
# not reach another endpoint through an upstream that normalises paths.
_MODEL_ID = re.compile(r"[A-Za-z0-9_:@.\-]+(/[A-Za-z0-9_:@.\-]+)*")


def route_of(method: str, path: str) -> Route | None:
    route = ROUTES.get((method, path))
    if route is None and method == "GET" and path.startswith("/v1/models/"):
        model = path.removeprefix("/v1/models/")
        dots = any(part in (".", "..") for part in model.split("/"))
        return _MODEL if _MODEL_ID.fullmatch(model) and not dots else None
    return route


def dialect_of(path: str, headers: Message) -> Dialect:
    """Whose error shape the client expects."""
    anthropic = path.startswith("/v1/messages") or "anthropic-version" in headers
    return "anthropic" if anthropic else "openai"
