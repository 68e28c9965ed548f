"""How figures are rounded and written for the UI: one place, so every view and every
metadata entry shows a score with 3 decimals and a cost with 4.

Rounding is for display only; the records keep full precision.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any

SCORE_DECIMALS = 3
COST_DECIMALS = 4
MISSING = "-"
"""What a missing figure reads as: missing stays missing, never 0."""


def round_figure(value: float, decimals: int = SCORE_DECIMALS) -> float:
    """`value` to `decimals` places, except a small non-zero value, which keeps 3 significant
    digits: a p-value of 2e-5 must not read as 0."""
    if not math.isfinite(value) or value == 0:
        return value
    rounded = round(value, decimals)
    if rounded == 0:
        return float(f"{value:.3g}")
    return rounded


def is_cost_key(key: object) -> bool:
    """Keys that name a cost in USD: `cost`, `worker_cost`, `cost_per_task`, `spend_usd`."""
    if not isinstance(key, str):
        return False
    key = key.lower()
    return key == "cost" or key.startswith("cost_") or key.endswith(("_cost", "_usd"))


def round_figures(value: Any, *, cost: bool = False) -> Any:
    """Metadata with its floats rounded: those under a cost key (see `is_cost_key`) to 4
    decimals, every other float to 3. Ints (numpy's too) come back as plain ints, bools,
    None and strings as they are; mappings, lists and tuples are walked."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        return round_figure(float(value), COST_DECIMALS if cost else SCORE_DECIMALS)
    if isinstance(value, Mapping):
        return {k: round_figures(v, cost=cost or is_cost_key(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [round_figures(v, cost=cost) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def score_text(value: float | None) -> str:
    return MISSING if value is None else f"{value:.{SCORE_DECIMALS}f}"


def cost_text(value: float | None) -> str:
    return MISSING if value is None else f"${value:.{COST_DECIMALS}f}"


def duration_text(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"
