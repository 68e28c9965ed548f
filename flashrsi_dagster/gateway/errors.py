"""Errors: `GatewayError` for the caller's mistakes, `Refusal` for a request the gateway answers
itself, in the client's dialect so that real SDKs raise their usual exception types."""

from __future__ import annotations

import json
from typing import Literal

Dialect = Literal["openai", "anthropic"]


class GatewayError(RuntimeError):
    """A misuse of the gateway's API (unknown token, unenforceable cap, not started ...)."""


class Refusal(Exception):
    """A request answered by the gateway itself: `status`, an error `kind`, a clear message."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message

    def body(self, dialect: Dialect) -> bytes:
        return error_body(dialect, self.kind, self.message)


def error_body(dialect: Dialect, kind: str, message: str) -> bytes:
    """`{"error": {...}}` for OpenAI clients; `{"type": "error", "error": {...}}` for Anthropic."""
    if dialect == "anthropic":
        shape = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        shape = {"error": {"type": kind, "message": message, "param": None, "code": kind}}
    return json.dumps(shape).encode()


def error_event(dialect: Dialect, message: str) -> bytes:
    """An SSE event that makes the dialect's SDKs raise with `message` mid-stream."""
    head = b"event: error\n" if dialect == "anthropic" else b""
    return head + b"data: " + error_body(dialect, "api_error", message) + b"\n\n"


def unauthorized(message: str) -> Refusal:
    return Refusal(401, "authentication_error", message)


def budget_exceeded(message: str) -> Refusal:
    return Refusal(402, "budget_exceeded", message)


RUN_BUDGET = "run_budget_exceeded"


def run_budget_exceeded(message: str) -> Refusal:
    """A model call past the run's own count (`Grant.max_calls`): 403, which SDKs do not
    retry, and the agent's error, not the endpoint's."""
    return Refusal(403, RUN_BUDGET, message)


TOOL_DENIED = "tool_denied"


def tool_denied(message: str) -> Refusal:
    """A model call offering the model a tool the run may not use: 403, never retried."""
    return Refusal(403, TOOL_DENIED, message)


def forbidden(message: str) -> Refusal:
    return Refusal(403, "permission_error", message)


def not_found(message: str) -> Refusal:
    return Refusal(404, "not_found_error", message)


def bad_request(message: str) -> Refusal:
    return Refusal(400, "invalid_request_error", message)


def too_large(message: str) -> Refusal:
    return Refusal(413, "request_too_large", message)


def bad_gateway(message: str) -> Refusal:
    return Refusal(502, "api_error", message)


def gateway_timeout(message: str) -> Refusal:
    return Refusal(504, "timeout_error", message)
