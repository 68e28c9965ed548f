"""Error bodies in each vendor's shape, so real clients raise their usual exception types."""

from __future__ import annotations

from typing import Any

# status -> (OpenAI `type`, OpenAI `code`)
_OPENAI = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}

_ANTHROPIC = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def openai_error(status: int, message: str) -> dict[str, Any]:
    fallback = ("server_error", None) if status >= 500 else ("invalid_request_error", None)
    kind, code = _OPENAI.get(status, fallback)
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    fallback = "api_error" if status >= 500 else "invalid_request_error"
    kind = _ANTHROPIC.get(status, fallback)
    return {"type": "error", "error": {"type": kind, "message": message}}
