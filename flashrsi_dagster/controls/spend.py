"""What an experiment's roles spent on models, read from its gateway call log
(`logs/gateway.jsonl`, one line per request, `gateway/log.py`): the algorithm-independent
account a budget-matched control reads, whatever records the experiment's algorithm keeps.

A line counts as a model call when the endpoint answered (HTTP 2xx) or failed on the
infrastructure's side (`fault`): what the gateway forwarded and what a Worker trajectory's
`usage.model_calls` counts. A request the gateway refused reached no model and is not one.
Tokens are input plus output, over every line. Unreadable lines (a torn last line) are skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

TARGET = "target"
"""The role that runs the benchmark's tasks: evaluation, not improvement."""


class Spend(BaseModel):
    """Model calls and tokens (input + output)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_calls: int = Field(0, ge=0)
    tokens: int = Field(0, ge=0)

    def __add__(self, other: Spend) -> Spend:
        return Spend(
            model_calls=self.model_calls + other.model_calls, tokens=self.tokens + other.tokens
        )

    def describe(self) -> str:
        return f"{self.model_calls} model calls, {self.tokens} tokens"


def spend_by_role(log: Path, experiment: str) -> dict[str, Spend]:
    """Each role's spend for `experiment` in the call log at `log` (empty when there is none)."""
    try:
        data = log.read_bytes()
    except FileNotFoundError:
        return {}
    spent: dict[str, Spend] = {}
    for line in data.split(b"\n"):
        call = _call(line)
        if call is None or call.get("experiment") != experiment:
            continue
        status, role = call.get("status"), call["role"]
        forwarded = (isinstance(status, int) and 200 <= status < 300) or bool(call.get("fault"))
        tokens = int(call.get("input_tokens") or 0) + int(call.get("output_tokens") or 0)
        spent[role] = spent.get(role, Spend()) + Spend(model_calls=int(forwarded), tokens=tokens)
    return dict(sorted(spent.items()))


def improvement(by_role: dict[str, Spend]) -> Spend:
    """What every role but the target spent: the search's own model budget."""
    return sum((s for role, s in by_role.items() if role != TARGET), Spend())


def _call(line: bytes) -> dict | None:
    try:
        call = json.loads(line)
    except ValueError:
        return None
    if not isinstance(call, dict) or not isinstance(call.get("role"), str):
        return None
    return call
