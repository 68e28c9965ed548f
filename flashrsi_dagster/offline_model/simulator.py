"""The simulator proper: routes a request to its dialect and policy, applies faults, logs it.

Transport-free (`HttpRequest` in, `HttpResponse` out); `server.py` moves the bytes.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from flashrsi_dagster.offline_model.config import FaultKind, ServerConfig
from flashrsi_dagster.offline_model.conversation import number_tool_calls
from flashrsi_dagster.offline_model.dialects import BY_PATH, Dialect, Turn, anthropic, openai_chat
from flashrsi_dagster.offline_model.errors import SimulatorError
from flashrsi_dagster.offline_model.exchange import HttpRequest, HttpResponse
from flashrsi_dagster.offline_model.faults import FaultPlan
from flashrsi_dagster.offline_model.log import Api, RequestLog, RequestRecord
from flashrsi_dagster.offline_model.policies import PolicyRegistry
from flashrsi_dagster.offline_model.tokens import input_tokens, output_tokens

logger = logging.getLogger("flashrsi.offline_model")

ROLE_HEADER = "x-flashrsi-role"


@dataclass
class _Draft:
    """The request record as it is being learned."""

    api: Api = "unknown"
    model: str | None = None
    role: str | None = None
    stream: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    fault: FaultKind | None = None
    body: dict[str, Any] | None = None


class Simulator:
    def __init__(
        self,
        config: ServerConfig,
        registry: PolicyRegistry,
        log: RequestLog,
        stopping: threading.Event,
    ) -> None:
        self._config = config
        self._registry = registry
        self._log = log
        self._stopping = stopping  # set at shutdown: cuts latency waits and hangs short
        self._faults = FaultPlan(config)
        self._numbers = itertools.count(1)
        self._in_flight = 0
        self._counting = threading.Lock()

    @property
    def in_flight(self) -> int:
        """Requests arrived and not yet answered: what a test waits on before it cuts one."""
        return self._in_flight

    def handle(self, request: HttpRequest) -> HttpResponse:
        """Answer one request; never raises (a bug becomes a 500 in the endpoint's dialect)."""
        arrived, started = datetime.now(UTC), time.monotonic()
        draft = _Draft(role=request.headers.get(ROLE_HEADER))
        with self._counting:
            self._in_flight += 1
        try:
            response = self._dispatch(request, draft)
        except Exception as exc:
            logger.exception(
                "offline model simulator failed on %s %s", request.method, request.path
            )
            dialect = anthropic if draft.api in ("anthropic", "count_tokens") else openai_chat
            message = f"offline model simulator internal error: {type(exc).__name__}: {exc}"
            response = HttpResponse.json(500, dialect.error_body(500, message))
        finally:
            with self._counting:
                self._in_flight -= 1
        duration = time.monotonic() - started
        self._log.append(
            RequestRecord(
                time=arrived, status_code=response.status, duration=duration, **asdict(draft)
            )
        )
        return response

    def _dispatch(self, request: HttpRequest, draft: _Draft) -> HttpResponse:
        path = route_path(request.path)
        if request.method == "GET" and path == "/models":
            draft.api = "models"
            if not self._key_accepted(request):  # as a real endpoint lists models: keyed
                message = "offline model simulator: the request's API key is not accepted"
                dialect = anthropic if "anthropic-version" in request.headers else openai_chat
                return HttpResponse.json(401, dialect.error_body(401, message))
            return self._models(request)
        if request.method == "POST" and path in ("/web/fetch", "/web/search"):
            draft.api = "web"
            return _web_page(request, path)
        if request.method == "POST" and path == "/messages/count_tokens":
            draft.api = "count_tokens"
            return _answer_errors(anthropic, lambda: self._count_tokens(request, draft))
        dialect = BY_PATH.get(path) if request.method == "POST" else None
        if dialect is None:
            return _not_found(request, path)
        draft.api = dialect.api  # type: ignore[assignment]
        if not self._key_accepted(request):
            message = "offline model simulator: the request's API key is not accepted"
            return HttpResponse.json(401, dialect.error_body(401, message))
        return _answer_errors(dialect, lambda: self._generate(dialect, request, draft))

    def _key_accepted(self, request: HttpRequest) -> bool:
        accepted = self._config.accepted_keys
        if not accepted:
            return True
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        return bearer in accepted or request.headers.get("x-api-key", "") in accepted

    def _generate(self, dialect: Dialect, request: HttpRequest, draft: _Draft) -> HttpResponse:
        body = _json_body(request.body)
        if self._config.record_bodies:
            draft.body = body
        conversation = dialect.parse(body)
        draft.model, draft.stream = conversation.model, conversation.stream
        draft.input_tokens = input_tokens(conversation)
        fault = self._faults.next()
        draft.fault = fault.kind
        if fault.delay:
            self._stopping.wait(fault.delay)
        if fault.kind == "hang":
            self._stopping.wait(self._config.hang_seconds)
            return HttpResponse(status=None)
        if fault.kind is not None:
            raise SimulatorError(int(fault.kind), f"offline model simulator: injected {fault.kind}")
        policy = self._registry.resolve(conversation.model)
        reply = number_tool_calls(policy(conversation), conversation)
        draft.output_tokens = output_tokens(reply)
        turn = Turn(
            model=conversation.model,
            number=next(self._numbers),
            created=int(time.time()),
            input_tokens=draft.input_tokens,
            output_tokens=draft.output_tokens,
            body=body,
        )
        if conversation.stream:
            return HttpResponse.event_stream(dialect.render_stream(reply, turn))
        return HttpResponse.json(200, dialect.render(reply, turn))

    def _count_tokens(self, request: HttpRequest, draft: _Draft) -> HttpResponse:
        conversation = anthropic.parse(_json_body(request.body))
        draft.model, draft.input_tokens = conversation.model, input_tokens(conversation)
        return HttpResponse.json(200, anthropic.count_tokens_body(draft.input_tokens))

    def _models(self, request: HttpRequest) -> HttpResponse:
        ids = self._registry.model_ids()
        if "anthropic-version" in request.headers:
            data = [
                {
                    "type": "model",
                    "id": model,
                    "display_name": f"{model} (offline simulator)",
                    "created_at": "1970-01-01T00:00:00Z",
                }
                for model in ids
            ]
            page = {"data": data, "has_more": False, "first_id": ids[0], "last_id": ids[-1]}
            return HttpResponse.json(200, page)
        data = [
            {"id": model, "object": "model", "created": 0, "owned_by": "flashrsi-simulator"}
            for model in ids
        ]
        return HttpResponse.json(200, {"object": "list", "data": data})


def route_path(raw: str) -> str:
    """`/v1/chat/completions?x=1` -> `/chat/completions`: the `/v1` prefix is optional."""
    path = urlsplit(raw).path.rstrip("/") or "/"
    return (path[3:] or "/") if path == "/v1" or path.startswith("/v1/") else path


def _answer_errors(dialect: Dialect, answer: Callable[[], HttpResponse]) -> HttpResponse:
    """`answer()`, with a `SimulatorError` rendered in the dialect's error shape."""
    try:
        return answer()
    except SimulatorError as error:
        headers = {"Retry-After": "0"} if error.status == 429 else {}
        return HttpResponse.json(
            error.status, dialect.error_body(error.status, error.message), headers
        )


def _json_body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"null")
    except ValueError as exc:
        raise SimulatorError(
            400, f"offline model simulator: the request body is not valid JSON ({exc})"
        ) from None
    if not isinstance(body, dict):
        raise SimulatorError(400, "offline model simulator: the request body must be a JSON object")
    return body


def _web_page(request: HttpRequest, path: str) -> HttpResponse:
    """A deterministic page for any URL, or results for any query: the offline stand-in for
    the web, which the model gateway serves runs through (`web.source: simulator`)."""
    key = "query" if path == "/web/search" else "url"
    try:
        value = json.loads(request.body or b"{}").get(key)
    except (ValueError, AttributeError):
        value = None
    if not isinstance(value, str):
        return HttpResponse.json(400, openai_chat.error_body(400, f'expected {{"{key}": ...}}'))
    if key == "url":
        url = value
        text = f"Offline simulator page for {value}\nThis page is the same on every fetch.\n"
    else:
        slug = "-".join(value.lower().split())[:60]
        url = f"https://offline.invalid/search?q={slug}"
        text = f"Offline simulator results for {value}\n1. https://offline.invalid/{slug}\n"
    return HttpResponse.json(
        200, {"url": url, "status": 200, "content_type": "text/plain", "text": text}
    )


def _not_found(request: HttpRequest, path: str) -> HttpResponse:
    anthropic_client = "anthropic-version" in request.headers or path.startswith("/messages")
    dialect = anthropic if anthropic_client else openai_chat
    message = f"the offline model simulator has no route {request.method} {request.path}"
    return HttpResponse.json(404, dialect.error_body(404, message))
