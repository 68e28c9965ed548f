"""Latency and injected faults, drawn from one seeded generator in request order."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass

from flashrsi_dagster.offline_model.config import FaultKind, ServerConfig


@dataclass(frozen=True)
class Fault:
    """What happens to one model request before its policy runs."""

    delay: float
    """Seconds to wait before answering."""
    kind: FaultKind | None = None


class FaultPlan:
    """Thread-safe source of per-request delays and faults.

    Every draw consumes the same three numbers, whatever the outcome, so the n-th request always
    gets the same fault for a given seed even when the rates or kinds differ between runs.
    """

    def __init__(self, config: ServerConfig) -> None:
        self._config = config
        self._random = random.Random(config.seed)
        self._lock = threading.Lock()

    def next(self) -> Fault:
        with self._lock:
            jitter = self._random.uniform(-1.0, 1.0)
            failure = self._random.random()
            pick = self._random.randrange(len(self._config.failure_kinds))
        delay_ms = max(0.0, self._config.latency_ms + jitter * self._config.jitter_ms)
        kind = self._config.failure_kinds[pick] if failure < self._config.failure_rate else None
        return Fault(delay=delay_ms / 1000, kind=kind)
