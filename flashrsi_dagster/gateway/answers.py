"""What the gateway accepts from an endpoint: JSON of bounded depth, answers of their API's
shape, usage counts that are counts. Anything else is an `EndpointFault`: the endpoint's,
never the agent's (the call ends in a 502 that names the cause, and the run's accounts keeps it).

Bounds (see docs/confinement.md): `MAX_JSON_DEPTH` levels of nesting in any JSON the
gateway reads (a request, an answer, a stream event), `MAX_CALL_TOKENS` tokens in one call's
usage; the byte bounds of answers are the gateway's (`server.py`).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from flashrsi_dagster.gateway.metering import Kind, Tokens, tokens_of

MAX_JSON_DEPTH = 128
"""Levels of nesting of any JSON the gateway parses; no API the gateway serves nests deeper
than a few dozen (tool schemas included)."""
MAX_CALL_TOKENS = 10_000_000
"""Input or output tokens one call may report: more than any model's context."""


class EndpointFault(Exception):
    """The endpoint (or the gateway itself) failed a call; `cause` says how, for the log,
    the run's accounts and the 502 the client gets."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


class TooDeep(ValueError):
    def __init__(self) -> None:
        super().__init__(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


def loads(
    data: bytes | str,
    object_pairs_hook: Callable[[list], Any] | None = None,
    parse_constant: Callable[[str], Any] | None = None,
    parse_float: Callable[[str], Any] | None = None,
    parse_int: Callable[[str], Any] | None = None,
) -> Any:
    """JSON nested at most `MAX_JSON_DEPTH` deep; ValueError otherwise, `TooDeep` for the
    nesting (never a RecursionError: the C parser's own guard is caught, and the depth is
    walked after, when the text has enough brackets to nest that deep)."""
    try:
        value = json.loads(
            data,
            object_pairs_hook=object_pairs_hook,
            parse_constant=parse_constant,
            parse_float=parse_float,
            parse_int=parse_int,
        )
    except RecursionError:
        raise TooDeep() from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text: {exc.reason}") from None
    opening = ("[", "{") if isinstance(data, str) else (b"[", b"{")
    brackets = data.count(opening[0]) + data.count(opening[1])  # type: ignore[arg-type]
    if brackets > MAX_JSON_DEPTH and depth_over(value, MAX_JSON_DEPTH):
        raise TooDeep()
    return value


def depth_over(value: Any, limit: int) -> bool:
    """Whether `value` nests deeper than `limit`, walked without recursion."""
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def endpoint_json(data: bytes) -> Any:
    """An endpoint's JSON (`loads`), refused (ValueError) unless every client reads it as
    Python's parser does: UTF-8 without a BOM (Python also reads UTF-16 and UTF-32, and
    UTF-8 encoded surrogates, which a harness cannot write out again), no `NaN` or
    `Infinity` (Python reads them; JavaScript's and Rust's parsers, Claude Code's and
    Codex's, refuse the whole answer), no key twice in an object (Python and JavaScript keep
    the last, serde refuses, others keep the first: what the gateway checked would not be
    what such a client reads), no string holding a lone surrogate (`"\\ud800"`: valid
    JSON, not Unicode text; the seed MiniAgent and the plain-LLM target crashed on one), and
    no number past a float's range (`1e999`, 400 digits: Python reads `inf`, serde refuses
    the whole answer as "number out of range", and a harness writing it out again writes
    `Infinity`)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text: {exc.reason}") from None
    if text.startswith("\ufeff"):
        raise ValueError("UTF-8 text that starts with a byte order mark")
    value = loads(text, _unique_keys, _no_constant, _finite, _finite_int)
    if _SURROGATE_ESCAPE.search(data) and _lone_surrogate(value):
        raise ValueError("a string with a lone surrogate, not Unicode text")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) < len(pairs):
        twice = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
        raise ValueError(f"an object with the key {_short(twice, 40)!r} twice")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name}, which is not JSON (JavaScript's and Rust's parsers refuse it)")


def _finite(text: str) -> float:
    """A JSON number as a float, refused past a float's range."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {_short(text, 40)}, out of a float's range")
    return value


def _finite_int(text: str) -> int:
    """A JSON integer as an int, refused past a float's range (as serde reads it: a float)."""
    if len(text) > 300:  # shorter ones are within it; 4300 digits and more int() refuses
        _finite(text)
    return int(text)


def _lone_surrogate(value: Any) -> bool:
    """Whether a string (or key) in `value` is not encodable as UTF-8, walked without
    recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def answer_tokens(kind: Kind, body: bytes) -> Tokens:
    """The tokens of a whole 2xx model answer, after checking it is one: a JSON object of its
    API's shape whose usage (if any: none is `Tokens.known` False) holds counts."""
    try:
        data = endpoint_json(body)
    except ValueError as exc:
        raise EndpointFault(f"an answer that is not valid JSON ({_short(exc)})") from None
    if not isinstance(data, dict):
        raise EndpointFault(f"a JSON {type(data).__name__}, not an object")
    if (missing := _shape_problem(kind, data)) is not None:
        raise EndpointFault(f"an answer of the wrong shape for its API ({missing})")
    return usage_tokens(kind, data.get("usage"))


def usage_tokens(kind: Kind, usage: Any) -> Tokens:
    """Tokens of a `usage` object: absent is unknown; counts that are not whole numbers in
    0..MAX_CALL_TOKENS are the endpoint's fault, never trusted (a negative count would
    refund the role's cap)."""
    if usage is None:
        return Tokens(known=False)
    if not isinstance(usage, dict):
        raise EndpointFault(f"usage that is a JSON {type(usage).__name__}, not an object")
    for name, value in usage.items():
        if not name.endswith("_tokens") or value is None:
            continue
        if type(value) is not int or not 0 <= value <= MAX_CALL_TOKENS:
            raise EndpointFault(f"usage {name} = {_short(value)}, not a count of tokens")
    return tokens_of(kind, usage)


def check_head(status: int, encoding: str | None) -> None:
    """Faults the head of an answer shows: a redirect (the gateway forwards a fixed set of
    API routes, none of which redirects, and a client following one would leave its jail's
    only way out), and a body encoded although the gateway asked for none (it cannot be
    checked, and a client that decompressed it could get gigabytes from a few kilobytes)."""
    if 300 <= status < 400:
        raise EndpointFault(f"a redirect (HTTP {status}), which the gateway does not follow")
    if status < 200:
        raise EndpointFault(f"an informational status (HTTP {status}) for an answer")
    encoding = (encoding or "identity").strip().lower()
    if encoding != "identity":
        encoded = f"a body encoded as {encoding[:40]!r}"
        raise EndpointFault(f"{encoded}, though the gateway asked for none")


def check_depth(body: bytes) -> None:
    """A body relayed without a check of its shape (an error, a model list) is still JSON a
    client parses: nested past the bound, it is a fault."""
    try:
        loads(body)
    except TooDeep as exc:
        raise EndpointFault(f"a body of {exc}") from None
    except ValueError:
        pass


def _shape_problem(kind: Kind, data: dict[str, Any]) -> str | None:
    if isinstance(data.get("error"), dict):
        return "an error object in a 2xx answer"
    if kind == "chat":
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            return "no choices"
        for choice in choices:
            message = choice.get("message") if isinstance(choice, dict) else None
            if not isinstance(message, dict):
                return "a choice without a message"
            if (problem := _message_problem(message)) is not None:
                return problem
        return None
    listed = "output" if kind == "responses" else "content"
    items = data.get(listed)
    if not isinstance(items, list):
        return f"no {listed} list"
    fields = _RESPONSES_ITEMS if kind == "responses" else _MESSAGES_BLOCKS
    return _items_problem(items, fields, listed)


_TOOL_CALL_FIELDS = {"function": ("name", "arguments"), "custom": ("name", "input")}
"""A chat tool call's object and the strings it holds (SDKs read them as strings: a harness
reading `arguments` with `json.loads` fails on an object)."""
_RESPONSES_ITEMS: dict[str, tuple[str, ...]] = {
    "function_call": ("call_id", "name", "arguments"),
    "custom_tool_call": ("call_id", "name", "input"),
    "output_text": ("text",),
}
"""Responses output items (and message parts) and the strings each must hold."""
_MESSAGES_BLOCKS: dict[str, tuple[str, ...]] = {"text": ("text",), "tool_use": ("id", "name")}
"""Anthropic content blocks and the strings each must hold."""


def _message_problem(message: dict[str, Any]) -> str | None:
    content, calls = message.get("content"), message.get("tool_calls")
    if calls is not None and not (
        isinstance(calls, list) and all(isinstance(c, dict) for c in calls)
    ):
        return "tool_calls that are not a list of objects"
    for call in calls or []:
        held = [k for k in _TOOL_CALL_FIELDS if isinstance(call.get(k), dict)]
        if not held or any(
            not isinstance(call[k].get(name), str) for k in held for name in _TOOL_CALL_FIELDS[k]
        ):
            return "a tool call without a function whose name and arguments are strings"
    said = content is not None or calls or message.get("refusal")
    if not (isinstance(content, str | None) and said):
        return "the message has no content and no tool calls"
    return None


def _items_problem(items: list[Any], fields: dict[str, tuple[str, ...]], listed: str) -> str | None:
    """The first item of `items` (a Responses output, a message's parts, a Messages content)
    that is not an object with a `type`, or lacks a string its type holds. An SDK reads each
    as such (`item.type`, `"".join(texts)`): an int there fails the harness, not the model."""
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            return f"an item of {listed} that is not an object with a type"
        if any(not isinstance(item.get(name), str) for name in fields.get(item["type"], ())):
            return f"a {item['type'][:40]!r} item of {listed} without its strings"
        parts = item.get("content") if item["type"] == "message" else []
        if not isinstance(parts, list):
            return f"a message in {listed} whose content is not a list"
        if parts and (problem := _items_problem(parts, fields, "a message")) is not None:
            return problem
    return None


_DELTA_STRINGS = {"text_delta": "text", "input_json_delta": "partial_json"}
_DELTA_STRINGS |= {"thinking_delta": "thinking"}
"""A Messages content block delta's type and the string it carries."""


def event_problem(kind: Kind, data: dict[str, Any]) -> str | None:
    """What an SDK could not read in one stream event of `kind` (None: nothing): the stream
    counterpart of an answer's shape, checked on the parts a client reads unchecked."""
    if kind == "chat":
        choices = data.get("choices", [])
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            return "choices that are not a list of objects"
        deltas = [c["delta"] for c in choices if "delta" in c]
        if not all(isinstance(d, dict) for d in deltas):
            return "a delta that is not an object"
        for delta in deltas:
            calls = delta.get("tool_calls") or []
            if not isinstance(delta.get("content"), str | None) or not isinstance(calls, list):
                return "a delta whose content is not a string or tool_calls not a list"
            for call in calls:
                function = call.get("function", {}) if isinstance(call, dict) else None
                if not isinstance(function, dict) or not all(
                    isinstance(function.get(k), str | None) for k in ("name", "arguments")
                ):
                    return "a tool call delta without a function of strings"
        return None
    delta, event = data.get("delta"), data.get("type")
    if kind == "responses":
        if "item" in data:
            return _items_problem([data["item"]], _RESPONSES_ITEMS, "a stream event")
        if isinstance(event, str) and event.endswith(".delta") and not isinstance(delta, str):
            return f"a {event[:60]!r} event whose delta is not a string"
        return None
    if "content_block" in data:
        return _items_problem([data["content_block"]], _MESSAGES_BLOCKS, "a stream event")
    if event == "content_block_delta" and "delta" in data:
        if not isinstance(delta, dict) or not isinstance(delta.get("type"), str):
            return "a content block delta that is not an object with a type"
        carried = _DELTA_STRINGS.get(delta["type"])
        if carried is not None and not isinstance(delta.get(carried), str):
            return f"a {delta['type'][:40]!r} without its {carried}"
    return None


def _short(value: Any, limit: int = 120) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."
