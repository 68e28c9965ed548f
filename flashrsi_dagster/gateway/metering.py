"""Tokens read from model responses (whole JSON or SSE streams), their cost, and the totals
kept per run and per (experiment, role)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from flashrsi_dagster.config.models import PriceConfig
from flashrsi_dagster.llm.usage import cost_of

Kind = Literal["chat", "responses", "messages"]

# Anthropic bills prompt-cache writes at 1.25x and reads at 0.1x the input price (5-minute
# cache). PriceConfig has one input price, so these published ratios are applied to it; OpenAI's
# cached tokens stay at the full input price (an upper bound: its discount varies by model).
CACHE_WRITE_RATIO = 1.25
CACHE_READ_RATIO = 0.1


@dataclass(frozen=True)
class Tokens:
    """The usage of one model call."""

    input: int = 0
    """All input tokens, cached ones included."""
    output: int = 0
    cache_read: int = 0
    """Of `input`, those read from Anthropic's prompt cache."""
    cache_write: int = 0
    """Of `input`, those written to Anthropic's prompt cache."""
    known: bool = True
    """False: an answer that reported no usage (counted as 0 tokens, of unknown cost)."""

    def cost(self, price: PriceConfig | None) -> float | None:
        if not self.known:
            return None
        uncached = self.input - self.cache_read - self.cache_write
        cached = CACHE_WRITE_RATIO * self.cache_write + CACHE_READ_RATIO * self.cache_read
        return cost_of(price, uncached + cached, self.output)  # type: ignore[arg-type]


def tokens_of(kind: Kind, usage: Any) -> Tokens:
    """Tokens from a response's `usage` object, in the field names of its API."""
    if not isinstance(usage, dict):
        return Tokens()

    def count(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and value > 0 else 0

    if kind == "chat":
        return Tokens(count("prompt_tokens"), count("completion_tokens"))
    if kind == "responses":
        return Tokens(count("input_tokens"), count("output_tokens"))
    # Anthropic's input_tokens leaves the cached ones out; they are input all the same.
    read, write = count("cache_read_input_tokens"), count("cache_creation_input_tokens")
    return Tokens(count("input_tokens") + read + write, count("output_tokens"), read, write)


def usage_of_event(kind: Kind, data: Any) -> dict[str, Any] | None:
    """The `usage` carried by one SSE event's data, if any."""
    if not isinstance(data, dict):
        return None
    if kind == "chat":
        usage = data.get("usage")
    elif kind == "responses":  # response.completed / .incomplete / .failed
        response = data.get("response")
        usage = response.get("usage") if isinstance(response, dict) else None
    elif data.get("type") == "message_start":
        message = data.get("message")
        usage = message.get("usage") if isinstance(message, dict) else None
    else:  # message_delta: cumulative counts, merged over message_start's
        usage = data.get("usage")
    return usage if isinstance(usage, dict) else None


@dataclass
class Usage:
    """Totals over some calls. `cost_usd` is None as soon as one counted call had no price:
    a sum that leaves calls out is not a cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    calls: int = 0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, tokens: Tokens, cost: float | None) -> None:
        self.calls += 1
        self.input_tokens += tokens.input
        self.output_tokens += tokens.output
        self.cost_usd = None if self.cost_usd is None or cost is None else self.cost_usd + cost

    def merge(self, other: Usage) -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        if self.cost_usd is not None:
            self.cost_usd = None if other.cost_usd is None else self.cost_usd + other.cost_usd


@dataclass
class RunUsage:
    """What one run (one token) used, as returned by `Gateway.revoke`."""

    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    calls: int
    """Model calls forwarded upstream and ended (answered, failed or timed out)."""
    refused: list[str]
    """Messages of the calls the gateway refused (cap reached, bad token, ...); the first 100."""
    in_flight: int
    """Upstream calls still running at revoke (a run cut short while waiting on a model)."""
    timed_out: int
    """Upstream calls that hit `Upstream.timeout`."""
    capped: list[str] = field(default_factory=list)
    """Of `refused`, the calls refused because the role reached a spending cap."""
    failed: int = 0
    """Calls that failed on the endpoint's side or the gateway's: no answer, a timeout, HTTP
    429 or 5xx, an answer the gateway refused (malformed, of the wrong shape, odd usage, too
    large, too deep), the gateway's own error. What an infrastructure fault of the run must be
    backed by."""
    key_refused: int = 0
    """Upstream calls the endpoint refused for the role's key (HTTP 401 or 403): no rerun
    helps, and an evaluation where every rollout saw it stops (see `rollouts.engine`)."""
    over_budget: list[str] = field(default_factory=list)
    """Of `refused`, the model calls refused past the run's `max_calls` (a harness that
    ignored its turn budget): the agent's own error, never rerun."""
    answered: int = 0
    """Model calls answered with HTTP 2xx (what the run's `max_calls` counts)."""
    web_requests: int = 0
    """Web fetches served through `/v1/web/fetch`."""
    denied: list[str] = field(default_factory=list)
    """Of `refused`, the model calls refused for offering the model a tool the run's
    permissions withhold (`Grant.deny_tools`): the agent's own error, never rerun."""
    clipped: int = 0
    """Tool results the gateway cut to the run's output limit (`Grant.output_limit`), summed
    over the run's model calls (a result sent again in a later call counts again)."""
    faults: list[str] = field(default_factory=list)
    """The causes of `failed`, in order (the first 100)."""
    last_fault: str | None = None
    """The cause of the fault that ended the run's last model call, unless a later model call
    was answered: a run that did not succeed after it is the infrastructure's fault."""
