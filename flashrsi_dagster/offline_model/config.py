"""`ServerConfig`: where the offline model simulator listens, how slow and unreliable it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FaultKind = Literal["429", "500", "hang"]


class ServerConfig(BaseModel):
    """Settings of one offline model simulator server."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field("127.0.0.1", description="Interface to bind; loopback by default.")
    port: int = Field(0, ge=0, le=65535, description="TCP port; 0 picks a free one.")
    latency_ms: float = Field(0.0, ge=0, description="Delay added to every model request.")
    jitter_ms: float = Field(
        0.0, ge=0, description="The delay varies uniformly by up to this much either way."
    )
    failure_rate: float = Field(
        0.0, ge=0, le=1, description="Probability that a model request gets an injected fault."
    )
    failure_kinds: tuple[FaultKind, ...] = Field(
        ("429", "500", "hang"),
        min_length=1,
        description="Faults to draw from: `429` (rate limited, Retry-After: 0), `500` (server "
        "error), `hang` (the connection is held for `hang_seconds`, then closed unanswered).",
    )
    hang_seconds: float = Field(30.0, ge=0, description="How long a `hang` fault holds on.")
    seed: int = Field(
        0, description="Seeds latency jitter and faults: same seed and request order, same run."
    )
    accepted_keys: tuple[str, ...] = Field(
        (),
        description="When set, a model request must carry one of these keys (`Authorization: "
        "Bearer` or `x-api-key`); any other gets 401 in the endpoint's dialect, as a real "
        "endpoint answers a wrong key. Empty (the default): every key is accepted.",
    )
    record_bodies: bool = Field(
        False,
        description="Keep each model request's JSON body in the request log (`RequestRecord."
        "body`), for tests that check what a client sent; off by default: bodies are large.",
    )
    scripts: dict[str, Path | list[Any]] = Field(
        default_factory=dict,
        description="Script name -> YAML/JSON script file, or the list of replies itself; "
        "served as model `simulator/script:<name>`.",
    )
