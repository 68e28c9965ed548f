"""What a run may use: its `Upstream` (where its calls go, with the real key), the `Caps` of its
role, and the per-run token that names it. Tokens are kept only as SHA-256 digests."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal
from urllib.parse import urlsplit

from flashrsi_dagster.config.models import PriceConfig
from flashrsi_dagster.gateway.errors import GatewayError

Api = Literal["chat", "responses", "anthropic"]
Family = Literal["openai", "anthropic"]

# A distinctive prefix lets every log line be scrubbed of tokens by shape, without keeping them.
TOKEN_PREFIX = "frsi-gw-"


@dataclass(frozen=True)
class Upstream:
    """One real endpoint and how to authenticate to it."""

    base_url: str
    """Replaces the request path's leading `/v1`: `https://api.openai.com/v1`,
    `http://127.0.0.1:PORT/v1`, `https://api.anthropic.com/v1`."""
    api: Api
    """Decides the auth header upstream: Bearer for chat/responses, `x-api-key` for anthropic."""
    key: str | None = field(repr=False)
    """The real key, resolved. Never logged, never returned, left out of `repr`."""
    price: PriceConfig | None = None
    """USD per million tokens; None: calls through this upstream have no cost."""
    timeout: float = 120.0
    """Seconds allowed for one whole upstream call, from connecting to the answer's last byte
    (streamed answers too): an endpoint that trickles its answer is cut then."""
    models: frozenset[str] | None = None
    """When set, requests naming another model are refused (403): a run cannot switch to a
    pricier model than the one it was priced for."""
    max_output: int | None = None
    """Output tokens one model call may ask for (the role's `llm.max_tokens`): a request
    asking for more, or naming no limit, is lowered to it (`ceilings.py`). None: no ceiling."""
    effort: str | None = None
    """The highest reasoning effort a call may ask for (the role's `llm.reasoning.effort`)."""
    thinking: int | None = None
    """The largest Anthropic thinking budget a call may ask for (`llm.reasoning.budget_tokens`)."""
    choices: int = 1
    """Answers one chat call may ask for (`n`): one, or what the role's `llm.extra_body` sets."""
    oauth: bool = False
    """The key is an OAuth access token (a Claude login, `llm.auth: login`): sent as a Bearer
    token with Anthropic's OAuth beta header instead of `x-api-key`."""

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise GatewayError(f"upstream base_url must be an http(s) URL, got {self.base_url!r}")
        if self.api not in ("chat", "responses", "anthropic"):
            raise GatewayError(f"upstream api must be chat, responses or anthropic: {self.api!r}")
        if not self.timeout > 0:
            raise GatewayError(f"upstream timeout must be positive, got {self.timeout}")

    @property
    def family(self) -> Family:
        return "anthropic" if self.api == "anthropic" else "openai"

    @cached_property
    def origin(self) -> tuple[str, str, int]:
        """(scheme, host, port): the key of the upstream's keep-alive pool."""
        parts = urlsplit(self.base_url)
        default = 443 if parts.scheme == "https" else 80
        return parts.scheme, parts.hostname or "", parts.port or default

    @cached_property
    def path_prefix(self) -> str:
        return urlsplit(self.base_url).path.rstrip("/")

    @cached_property
    def query(self) -> str:
        """The URL's query (Azure's `api-version=...`), sent with every call."""
        return urlsplit(self.base_url).query


@dataclass(frozen=True)
class Caps:
    """Limits per (experiment, role), summed over all its runs; None = unlimited."""

    max_usd: float | None = None
    max_tokens: int | None = None
    """Input plus output tokens."""

    def __post_init__(self) -> None:
        for name, value in (("max_usd", self.max_usd), ("max_tokens", self.max_tokens)):
            if value is not None and value < 0:
                raise GatewayError(f"caps: {name} must not be negative, got {value}")


@dataclass(frozen=True)
class Grant:
    """Who a token speaks for, and where its calls go."""

    experiment: str
    role: str
    run_id: str
    upstream: Upstream
    token_id: str
    """A short digest of the token: safe to log, useless to present."""
    max_calls: int | None = None
    """Model calls the run may have answered (HTTP 2xx); past them every model call is
    refused (403). None: no count limit. The backstop of a role's `max_turns`, which a
    harness (evolvable code) could ignore; see `agents/budgets.py`."""
    web: WebAccess | None = None
    """How the run may reach the web (`/v1/web/fetch`); None: it may not."""
    deny_tools: frozenset[str] = frozenset()
    """Tool names the run's model may not be offered: a model call whose request describes
    one is refused (403). The backstop of a role's permissions (`agents/permissions.py`)."""
    output_limit: int | None = None
    """Characters of one tool result the run's model may read (plus `clipping.FRAMING`); a
    longer one is cut in the request. None: not cut. The harness's protected output limit,
    held outside the harness (`gateway/clipping.py`)."""
    candidate: str | None = None
    """The candidate the host granted the run for (`r001.c0`), named on each of its call-log
    lines; None: the experiment's own work (or a run outside any candidate)."""


@dataclass(frozen=True)
class WebAccess:
    """A run's web access through the gateway, the jail's only way out."""

    source: Literal["direct", "simulator"] = "direct"
    """`direct`: the gateway fetches public http(s) URLs itself (loopback, private and
    link-local addresses refused); `simulator`: the run's upstream (the offline simulator)
    serves deterministic pages, for tests."""
    max_bytes: int = 1 << 20
    """Bytes of one page read at most; the rest is cut."""
    timeout: float = 20.0
    """Seconds for one fetch."""
    search_url: str | None = None
    """`direct`: the results page of a search, `{query}` standing for the encoded query;
    None: no search (`simulator` serves its own)."""


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def token_id(token_digest: str) -> str:
    return token_digest[:12]
