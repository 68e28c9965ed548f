"""`Proxy`: serves one request: authenticate the token, check route, model and caps, forward
with the real key, relay the answer (streams as they arrive), meter it, log it."""

from __future__ import annotations

import http.client
import json
import logging
import time
import traceback
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from flashrsi_dagster.config.request_fields import (
    HOSTED_TOOL_FIELDS,
    MODEL_FIELD,
    OUTPUT_LIMIT_FIELDS,
    STREAM_FIELD,
    STREAM_OPTIONS_FIELD,
    TOOL_FIELDS,
    WEB_PLUGINS,
)
from flashrsi_dagster.gateway import errors
from flashrsi_dagster.gateway.accounts import Accounts, Run
from flashrsi_dagster.gateway.answers import (
    EndpointFault,
    TooDeep,
    answer_tokens,
    check_depth,
    check_head,
    loads,
)
from flashrsi_dagster.gateway.ceilings import hold_ceilings
from flashrsi_dagster.gateway.clipping import clip_tool_results
from flashrsi_dagster.gateway.errors import Refusal
from flashrsi_dagster.gateway.grants import digest, token_id
from flashrsi_dagster.gateway.handler import Handler, Headers
from flashrsi_dagster.gateway.listeners import Listener
from flashrsi_dagster.gateway.log import CallLog, CallRecord
from flashrsi_dagster.gateway.masking import KeyMask
from flashrsi_dagster.gateway.metering import Tokens
from flashrsi_dagster.gateway.routes import Route, dialect_of, route_of
from flashrsi_dagster.gateway.streams import StreamMeter
from flashrsi_dagster.gateway.upstream import Pool, request_headers, response_headers
from flashrsi_dagster.gateway.web import fetch_page, search_page

logger = logging.getLogger("flashrsi.gateway")

_JSON = [("Content-Type", "application/json")]
FAULT_STATUSES = frozenset({407, 408, 409, 421, 425, 429})
"""4xx answers that are the endpoint's state, not the request's fault (a request timeout, a
conflict, a rate limit: every client the project runs retries them, `llm/client.py`, the
Claude Code and Codex adapters; a proxy on the way wanting its own credentials, a request
sent to the wrong server, one too early to replay): infrastructure faults, as 5xx are."""
_READ = 65536


@dataclass
class _Forward:
    """One request on its way upstream."""

    run: Run
    route: Route
    target: str
    body: bytes
    drop_usage_chunk: bool = False
    reserve: int = 0
    """Tokens the call may use at most (held against the role's cap while it runs)."""
    settled: bool = False
    """Its end is in the accounts (done before the client sees the answer end)."""
    conn: http.client.HTTPConnection | None = None
    """The upstream connection it went out on (its deadline is the pool's)."""


@dataclass
class _Call:
    """One request as it is served: its log record, written once, before the client can see
    the answer end (so whoever acts on the answer finds the line)."""

    record: CallRecord
    started: float
    logged: bool = False
    held: int = 0
    """Tokens reserved against the role's cap, released when the line is written."""


class Proxy:
    def __init__(
        self, accounts: Accounts, pool: Pool, log: CallLog, max_body: int, max_answer: int,
        max_stream: int,
    ) -> None:  # fmt: skip
        """`max_body`: bytes of a request; `max_answer`: of a whole answer; `max_stream`: of
        a streamed one, all its events together."""
        self._accounts = accounts
        self._pool = pool
        self._log = log
        self._max_body = max_body
        self._max_answer = max_answer
        self._max_stream = max_stream

    def handle(self, h: Handler, listener: Listener) -> None:
        """Never raises but for the client's own connection failing (which ends it)."""
        url = urlsplit(h.path)
        call = _Call(CallRecord(method=h.command, path=url.path), time.perf_counter())
        record = call.record
        run: Run | None = None
        try:
            body = h.read_body(self._max_body)
            run = self._authenticate(h, listener, record)
            if (route := route_of(h.command, url.path)) is not None and route.web:
                self._web(h, run, url.path, body, record)
                return
            self._serve(h, self._prepare(h, run, url, body, record), call)
        except Refusal as refusal:
            record.status, record.error = refusal.status, refusal.message
            if run is not None:
                capped = refusal.kind == "budget_exceeded"
                over, denied = refusal.kind == errors.RUN_BUDGET, refusal.kind == errors.TOOL_DENIED
                self._accounts.refuse(
                    run, refusal.message, capped=capped, over_budget=over, denied=denied
                )
            self._log_once(call)
            self._answer(h, refusal)
        except Exception as exc:
            # Its words may quote the key (http.client's "Invalid header value b'Bearer ...'")
            mask = KeyMask(run.grant.upstream.key if run is not None else None)
            record.status, record.fault = 500, "gateway"
            record.error = mask.text(f"gateway bug: {type(exc).__name__}: {exc}")
            trace = mask.text("".join(traceback.format_exception(exc)))
            logger.error("gateway: failed on %s %s\n%s", h.command, url.path, trace)
            if run is not None:  # the infrastructure's fault, not the run's
                self._accounts.fail(run, f"the gateway's own error ({type(exc).__name__})")
            self._log_once(call)
            self._answer(h, errors.Refusal(500, "api_error", "gateway: internal error"))
        finally:
            self._log_once(call)

    def _web(self, h: Handler, run: Run, path: str, body: bytes, record: CallRecord) -> None:
        """A web fetch or search, served by the gateway itself (the jail has no other
        network)."""
        serve = search_page if path.endswith("/search") else fetch_page
        page = serve(run.grant, _json_object(body))
        self._accounts.web_request(run)
        record.status = 200
        _Client(h).send_whole(200, _JSON, json.dumps(page, ensure_ascii=False).encode())

    def _log_once(self, call: _Call) -> None:
        if not call.logged:
            call.logged = True
            call.record.duration_ms = round((time.perf_counter() - call.started) * 1000, 3)
            self._log.write(call.record, held=call.held)

    def _answer(self, h: Handler, refusal: Refusal) -> None:
        if h.response_started:  # mid-stream: cutting the connection is the only signal left
            h.close_connection = True
            return
        h.send_whole(refusal.status, _JSON, refusal.body(dialect_of(h.path, h.headers)))

    def _authenticate(self, h: Handler, listener: Listener, record: CallRecord) -> Run:
        token = _token_of(h)
        if token is None:
            raise errors.unauthorized(
                "gateway: no token: send `Authorization: Bearer <token>` or `x-api-key: <token>`"
            )
        token_digest = digest(token)
        record.token_id = token_id(token_digest)
        if listener.binding is not None and token_digest != listener.binding:
            message = "gateway: this token is not valid on this listener"
            if (bound := self._accounts.find(listener.binding)) is not None:
                self._accounts.refuse(bound, message)
            raise errors.unauthorized(message)
        run = self._accounts.find(token_digest)
        if run is None:
            raise errors.unauthorized("gateway: unknown token")
        g = run.grant
        record.experiment, record.role, record.run_id = g.experiment, g.role, g.run_id
        record.candidate = g.candidate
        if run.revoked:
            raise errors.unauthorized(f"gateway: token revoked: run {g.run_id!r} has ended")
        return run

    def _prepare(self, h: Handler, run: Run, url: Any, body: bytes, record: CallRecord) -> _Forward:
        """Route, model, tools and the run's call count checked (the role's caps are checked
        as the call is admitted); the body as it will go upstream."""
        route = route_of(h.command, url.path)
        upstream = run.grant.upstream
        if route is None:
            raise errors.not_found(f"gateway: no route {h.command} {url.path}")
        if route.family not in (None, upstream.family):
            raise errors.not_found(
                f"gateway: {url.path} is not available: this run's upstream speaks the "
                f"{upstream.family} API"
            )
        duplicated: list[str] = []
        request = _json_object(body, duplicated)
        if request is not None:
            model = request.get(MODEL_FIELD)
            record.model = model if isinstance(model, str) else None
            record.stream = request.get(STREAM_FIELD) is True
        allowed = upstream.models
        if h.command == "POST" and allowed is not None and record.model not in allowed:
            raise errors.forbidden(
                f"gateway: model {record.model!r} is not allowed for this run "
                f"(allowed: {', '.join(sorted(allowed))})"
            )
        if route.kind is not None and (offered := _denied_tools(request, run)):
            raise errors.tool_denied(
                f"gateway: the request offers the model {', '.join(offered)}, which this "
                "run's permissions withhold"
            )
        if route.kind is not None and (reason := self._accounts.over_calls(run)) is not None:
            raise errors.run_budget_exceeded(reason)
        target = upstream.path_prefix + url.path.removeprefix("/v1")
        query = "&".join(q for q in (upstream.query, url.query) if q)  # the endpoint's first
        target += f"?{query}" if query else ""
        if route.kind is not None and request is not None:
            body = self._clip(run, route.kind, request, body)
            if held := hold_ceilings(
                request, route.kind, upstream.max_output, upstream.effort, upstream.thinking,
                upstream.choices,
            ):  # fmt: skip
                logger.info("gateway: run %s asked past its ceilings: %s", run.grant.run_id, held)
                body = json.dumps(request, ensure_ascii=False).encode()
        forward = _Forward(run, route, target, body)
        if route.kind is not None:
            forward.reserve = _worst_case_tokens(request, body)
        canonical = upstream.models is not None or route.kind == "chat" or duplicated
        if request is not None and canonical:
            _canonical(forward, request, force=bool(duplicated))
        return forward

    def _clip(self, run: Run, kind: str, request: dict[str, Any], body: bytes) -> bytes:
        """The body with its tool results cut to the run's output limit (`clipping.py`)."""
        limit = run.grant.output_limit
        if limit is None or not (cut := clip_tool_results(request, kind, limit)):
            return body
        self._accounts.clip(run, cut)
        return json.dumps(request, ensure_ascii=False).encode()

    def _serve(self, h: Handler, forward: _Forward, call: _Call) -> None:
        upstream = forward.run.grant.upstream
        counted = forward.route.kind is not None
        refused = self._accounts.admit(forward.run, forward.reserve, counted=counted)
        if refused is not None:
            reason, own_budget = refused
            raise (errors.run_budget_exceeded if own_budget else errors.budget_exceeded)(reason)
        call.held = forward.reserve
        try:
            self._exchange(h, forward, call)
        except (TimeoutError, EndpointFault, OSError, http.client.HTTPException) as exc:
            cause = self._fault(forward, call, exc)
            refuse = errors.gateway_timeout if isinstance(exc, TimeoutError) else errors.bad_gateway
            raise refuse(f"gateway: the upstream {upstream.base_url} {cause}") from None
        finally:
            self._settle(forward, call, Tokens())

    def _fault(
        self, forward: _Forward, call: _Call, exc: BaseException, tokens: Tokens | None = None
    ) -> str:
        """The endpoint failed the call (`exc` says how): its end in the accounts with the
        cause, once, and before the client can learn of it. Returns the cause."""
        upstream = forward.run.grant.upstream
        timed_out = isinstance(exc, TimeoutError)
        if timed_out:
            cause = f"did not answer within {upstream.timeout:g} s"
        elif isinstance(exc, EndpointFault):
            cause = f"answered {exc.cause}"
        else:
            cause = f"failed: {type(exc).__name__}: {exc}"
        # it quotes what the endpoint answered (a count named with a megabyte)
        cause = KeyMask(upstream.key).quote(cause)
        if call.record.fault is None:
            call.record.fault = "endpoint"
            self._settle(forward, call, tokens or Tokens(), timed_out=timed_out)
            self._accounts.fail(forward.run, f"the upstream {cause}")
        return cause

    def _settle(
        self, forward: _Forward, call: _Call, tokens: Tokens, *, timed_out: bool = False,
        answered: bool = False,
    ) -> None:  # fmt: skip
        """Record the call's end once (a failed call ends with no tokens). An `answered` call
        is logged here too, before its last bytes leave; a failed one is logged with its
        error by `handle`."""
        if forward.settled:
            return
        forward.settled = True
        metered = tokens if forward.route.kind is not None else None
        record = call.record
        ok = record.status is not None and 200 <= record.status < 300 and record.fault is None
        self._accounts.end(
            forward.run, metered, timed_out=timed_out, reserved=forward.reserve, answered=ok
        )
        record.input_tokens, record.output_tokens = tokens.input, tokens.output
        record.cost_usd = tokens.cost(forward.run.grant.upstream.price)
        record.usage_unknown = metered is not None and not tokens.known
        if answered:
            self._log_once(call)

    def _exchange(self, h: Handler, forward: _Forward, call: _Call) -> None:
        """Upstream failures raise from here; the client's own failures do not (see _Client)."""
        upstream = forward.run.grant.upstream
        headers = request_headers(h.headers, upstream)
        conn, response = self._pool.send(upstream, h.command, forward.target, headers, forward.body)
        forward.conn = conn
        reusable = False
        try:
            call.record.status = response.status
            refused = response.status in (401, 403)
            mask = KeyMask(upstream.key)
            if not refused:  # a refused key is the status's, whatever the body's encoding
                # masked before it is quoted, cut short (a key cut is no key to the mask)
                encoding = response.getheader("Content-Encoding")
                check_head(response.status, encoding and mask.text(encoding))
            if response.status in FAULT_STATUSES or response.status >= 500:
                cause = f"the upstream answered HTTP {response.status}"
                call.record.fault, call.record.error = "endpoint", cause
                self._accounts.fail(forward.run, cause)
            out = mask.headers(response_headers(response))
            streamed = "text/event-stream" in (response.getheader("Content-Type") or "").lower()
            # a refused key is read whole and answered in the gateway's words, however sent
            # (a streamed 401 quoted part of the key, and was no refusal of it)
            streamed = streamed and not refused
            answer = forward.route.kind is not None and 200 <= response.status < 300
            if answer and streamed != call.record.stream:
                # The client parses what it asked for: SSE for JSON (or the reverse) breaks it.
                given, asked = ("a stream", "a whole answer")[:: 1 if streamed else -1]
                raise EndpointFault(f"{given} to a request for {asked}")
            if streamed:
                self._relay_stream(h, forward, response, out, call, mask)
            else:
                self._relay_whole(h, forward, response, out, call, mask)
            reusable = not response.will_close
        except (EndpointFault, OSError, http.client.HTTPException) as exc:
            if self._pool.expired(conn):  # cut at its deadline: whatever broke, it is that
                raise TimeoutError from exc
            raise
        finally:
            response.close()  # read1 leaves a body read to its Content-Length open
            self._pool.release(conn, reusable=reusable)

    def _relay_whole(
        self, h: Handler, forward: _Forward, response: http.client.HTTPResponse, out: Headers,
        call: _Call, mask: KeyMask,
    ) -> None:  # fmt: skip
        # masked before it is read: a fault's words quote the endpoint's, cut short (a key
        # cut is no key to the mask)
        body = mask.whole(self._read_whole(response, forward))
        tokens = Tokens()
        if response.status in (401, 403):
            self._accounts.refuse_key(forward.run)
            # The upstream's words may quote part of the real key ("sk-ab***yz"): not relayed.
            out, body = _JSON, errors.error_body(
                dialect_of(h.path, h.headers), "upstream_auth_error",
                f"gateway: the upstream {forward.run.grant.upstream.base_url} refused the "
                f"gateway's credentials (HTTP {response.status})",
            )  # fmt: skip
        elif forward.route.kind is not None and 200 <= response.status < 300:
            tokens = answer_tokens(forward.route.kind, body)
            # Checked JSON of its API: said so, whatever the endpoint called it (a client
            # that trusts the header, as Anthropic's TypeScript SDK does, reads text/html
            # as a string).
            out = [*_JSON, *((n, v) for n, v in out if n.lower() != "content-type")]
        else:
            check_depth(body)  # relayed as it is: the client will parse it
        self._settle(forward, call, tokens, answered=True)
        _Client(h).send_whole(response.status, out, body)

    def _read_whole(self, response: http.client.HTTPResponse, forward: _Forward) -> bytes:
        """The answer's body, at most `max_answer` bytes, whole (a short one is a fault)."""
        limit = self._max_answer
        if response.length is not None and response.length > limit:
            raise EndpointFault(f"an answer of {response.length} bytes, over the bound of {limit}")
        parts, size = [], 0
        while data := response.read1(_READ):
            size += len(data)
            if size > limit:
                raise EndpointFault(f"an answer over the bound of {limit} bytes")
            parts.append(data)
        if forward.conn is not None and self._pool.expired(forward.conn):
            raise TimeoutError
        if response.length:  # read1 ends quietly where a Content-Length promised more
            raise EndpointFault(f"an answer {response.length} bytes short of its Content-Length")
        return b"".join(parts)

    def _relay_stream(
        self, h: Handler, forward: _Forward, response: http.client.HTTPResponse, out: Headers,
        call: _Call, mask: KeyMask,
    ) -> None:  # fmt: skip
        kind = forward.route.kind
        meter = StreamMeter(kind, drop_usage_chunk=forward.drop_usage_chunk) if kind else None
        client = _Client(h)
        client.start_stream(response.status, out)
        try:
            self._relay_events(response, forward, client, meter, call, mask)
        except (TimeoutError, EndpointFault, OSError, http.client.HTTPException) as exc:
            # Cut mid-stream: what was used so far still counts.
            expired = forward.conn is not None and self._pool.expired(forward.conn)
            exc = TimeoutError() if expired else exc
            used = meter.tokens if meter else Tokens()
            cause = self._fault(forward, call, exc, used if used.known else Tokens())
            # The client learns why in its own dialect, then the cut (no clean end). The tail
            # the mask holds back is dropped with the event it belongs to: it may be a key cut
            # by the cut, and glued to the error event it made that no event.
            reason = f"gateway: the upstream's stream was cut: it {cause}"
            event = errors.error_event(dialect_of(h.path, h.headers), reason)
            client.write(event if meter else b"\n\n" + event)
            raise exc from None
        self._settle(forward, call, meter.tokens if meter else Tokens(), answered=True)
        client.write(meter.end() if meter else b"")
        client.end_stream()

    def _relay_events(
        self, response: http.client.HTTPResponse, forward: _Forward, client: _Client,
        meter: StreamMeter | None, call: _Call, mask: KeyMask,
    ) -> None:  # fmt: skip
        """Relay the stream to its end; its faults raise (`EndpointFault`, TimeoutError). An
        error the endpoint reports in an event is in the accounts before the client sees it."""
        size, limit = 0, self._max_stream
        # A client that goes away does not stop the read: the usage comes last, and is owed.
        while data := response.read1(_READ):
            size += len(data)
            if size > limit:
                raise EndpointFault(f"a stream over the bound of {limit} bytes")
            self._relay_read(mask.feed(data), forward, client, meter, call, mask)
        # a stream cut (its deadline, a close short of its length) is known before the held
        # tail goes out: it may be a key the cut cut
        if forward.conn is not None and self._pool.expired(forward.conn):
            raise TimeoutError
        if response.length:
            raise EndpointFault(f"a stream {response.length} bytes short of its Content-Length")
        self._relay_read(mask.end(), forward, client, meter, call, mask)
        if meter is not None:
            meter.check_end()
            if 200 <= response.status < 300 and (problem := meter.incomplete()):
                raise EndpointFault(problem)

    def _relay_read(
        self, data: bytes, forward: _Forward, client: _Client, meter: StreamMeter | None,
        call: _Call, mask: KeyMask,
    ) -> None:  # fmt: skip
        """Meter and relay one read of the stream, masked before it is read (a fault's words
        quote the endpoint's, cut short: a key cut is no key to the mask)."""
        events = meter.feed(data) if meter else data
        if meter is not None and meter.reported is not None and call.record.fault is None:
            cause = mask.text(f"the upstream {meter.reported}")
            call.record.fault, call.record.error = "endpoint", cause
            self._accounts.fail(forward.run, cause)
        client.write(events)


class _Client:
    """Writes to the client; once it has gone away, further writes are dropped (the proxy
    goes on reading the upstream to meter it) and the connection is closed afterwards."""

    def __init__(self, h: Handler) -> None:
        self._h = h
        self.gone = False

    def send_whole(self, status: int, headers: Headers, body: bytes) -> None:
        self._do(self._h.send_whole, status, headers, body)

    def start_stream(self, status: int, headers: Headers) -> None:
        self._do(self._h.start_stream, status, headers)

    def write(self, data: bytes) -> None:
        self._do(self._h.write_chunk, data)

    def end_stream(self) -> None:
        self._do(self._h.end_stream)

    def _do(self, write: Any, *args: Any) -> None:
        if self.gone:
            return
        try:
            write(*args)
        except OSError:
            self.gone = True
            self._h.close_connection = True


def _token_of(h: Handler) -> str | None:
    auth = h.headers.get("Authorization") or ""
    scheme, _, value = auth.strip().partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return (h.headers.get("x-api-key") or "").strip() or None


HOSTED_NETWORK_TOOLS = ("web_search", "web_fetch", "mcp")
"""Prefixes of built-in tool types the upstream runs itself (OpenAI's `web_search_preview`
and remote `mcp`, Anthropic's `web_search_20250305`, `web_fetch_20250910`, `mcp_toolset`):
they reach the network from the provider's side, past the jail and past the role's web
(`web.py`, the only web a run has). No run may offer them."""
COMMAND_TOOL_TYPES = ("local_shell", "shell")
"""Built-in tool types that run commands: offered under these shapes, they are `shell`."""


def _denied_tools(request: dict[str, Any] | None, run: Run) -> list[str]:
    """The tools a model request describes that the run may not offer (any API's shape:
    `{"name"}`, `{"function": {"name"}}`, chat's legacy `functions`, a built-in `{"type"}`),
    and every hosted network tool (`HOSTED_NETWORK_TOOLS`, Anthropic's `mcp_servers`)."""
    request = request or {}
    denied = run.grant.deny_tools
    tools = [
        tool
        for key in TOOL_FIELDS
        if isinstance(request.get(key), list)
        for tool in request[key]
        if isinstance(tool, dict)
    ]
    # a field present asks for it: `web_search_options: {}` turns OpenAI's search on
    names = []
    hosted = [key for key in HOSTED_TOOL_FIELDS if request.get(key) not in (None, [], False)]
    plugins = request.get("plugins")
    hosted += [
        f"plugins: {plugin['id']}"
        for plugin in (plugins if isinstance(plugins, list) else [])
        if isinstance(plugin, dict) and plugin.get("id") in WEB_PLUGINS
    ]
    for tool in tools:
        function = tool.get("function")
        names.append(function.get("name") if isinstance(function, dict) else tool.get("name"))
        kind = tool.get("type")
        if isinstance(kind, str) and kind.startswith(HOSTED_NETWORK_TOOLS):
            hosted.append(kind)
        elif kind in COMMAND_TOOL_TYPES:
            names.append("shell")
    return sorted({n for n in names if isinstance(n, str) and n in denied} | set(hosted))


def _json_object(body: bytes, duplicated: list[str] | None = None) -> dict[str, Any] | None:
    """The request as JSON, or None: a body that is not a JSON object goes upstream as it is
    (the upstream's 400 says what is wrong) and meters as nothing. Keys an object repeats
    are added to `duplicated`: Python keeps the last, an upstream's parser may keep the first."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        value = dict(items)
        if duplicated is not None and len(value) < len(items):
            duplicated.extend(name for name, _ in items)
        return value

    try:
        value = loads(body, object_pairs_hook=pairs) if body else None
    except TooDeep as exc:  # forwarded, it could crash the upstream's parser: the agent's error
        raise errors.bad_request(f"gateway: the request body is {exc}") from None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _canonical(forward: _Forward, request: dict[str, Any], *, force: bool = False) -> None:
    """Re-encode the body when the gateway relies on what it says.

    A chat stream must report its usage, so `stream_options.include_usage` is set (and the extra
    usage chunk dropped again for a client that did not ask). When only some models are allowed,
    the body sent is the one checked: duplicate keys cannot name a second model the upstream's
    parser would pick instead. A body with duplicate keys is always re-encoded (`force`):
    the tools the gateway checked (`_denied_tools`) are the tools the upstream reads.
    """
    options = request.get(STREAM_OPTIONS_FIELD)
    streaming_chat = forward.route.kind == "chat" and request.get(STREAM_FIELD) is True
    asked = isinstance(options, dict) and options.get("include_usage") is True
    if streaming_chat and not asked:
        request[STREAM_OPTIONS_FIELD] = {**(options if isinstance(options, dict) else {})}
        request[STREAM_OPTIONS_FIELD]["include_usage"] = True
        forward.drop_usage_chunk = True
    elif forward.run.grant.upstream.models is None and not force:
        return
    forward.body = json.dumps(request, ensure_ascii=False).encode()


DEFAULT_MAX_OUTPUT = 4096
"""Output tokens a request that names no limit is assumed to take, for cap reservations."""


def _worst_case_tokens(request: dict[str, Any] | None, body: bytes) -> int:
    """An upper estimate of a call's tokens: its output limit, and its input as at most one
    token per 3 bytes of body."""
    limits = [
        value
        for name in OUTPUT_LIMIT_FIELDS
        if isinstance(value := (request or {}).get(name), int) and value > 0
    ]
    return (max(limits) if limits else DEFAULT_MAX_OUTPUT) + len(body) // 3
