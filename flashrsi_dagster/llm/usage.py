"""Usage accounted per role: calls, tokens, and cost where the role's model is priced."""

from __future__ import annotations

import threading

from pydantic import BaseModel, ConfigDict

from flashrsi_dagster.config.models import PriceConfig


def cost_of(price: PriceConfig | None, input_tokens: int, output_tokens: int) -> float | None:
    if price is None:
        return None
    return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1e6


class RoleUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: str
    model: str
    calls: int = 0
    failed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None


class UsageMeter:
    """Thread-safe running totals for one role."""

    def __init__(self, role: str, model: str, price: PriceConfig | None) -> None:
        self._lock = threading.Lock()
        self._price = price
        self._usage = RoleUsage(role=role, model=model, cost=0.0 if price else None)

    def record(self, input_tokens: int, output_tokens: int) -> float | None:
        cost = cost_of(self._price, input_tokens, output_tokens)
        with self._lock:
            u = self._usage
            u.calls += 1
            u.input_tokens += input_tokens
            u.output_tokens += output_tokens
            if cost is not None:
                u.cost = (u.cost or 0.0) + cost
        return cost

    def record_failure(self) -> None:
        with self._lock:
            self._usage.failed_calls += 1

    def snapshot(self) -> RoleUsage:
        with self._lock:
            return self._usage.model_copy()
