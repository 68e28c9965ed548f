"""The screen: a candidate at K=1 on the anchor set, against the baseline's per-task rates
from the stability ledger (the cold start's K=3), sorted into three buckets. Only `cull` is
stopped; the screen is lenient by design, the confirm decides.

    d_i = screen_c,i - rate_v,i        delta = mean(d)
    sigma_screen = sqrt(sum_i p_i (1 - p_i)) / n,   p_i = rate_v,i   (one Bernoulli draw a task)

    cull        delta < -threshold * sigma_screen     (significantly worse)
    clear_win   delta > +threshold * sigma_screen
    within_band otherwise

With sigma_screen = 0 (every anchor task always passes or always fails for the baseline) the band
has no width: a candidate is culled only if it is worse, a clear win only if better.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Bucket = Literal["clear_win", "within_band", "cull"]


@dataclass(frozen=True)
class ScreenResult:
    n: int
    delta: float
    sigma: float
    threshold: float
    bucket: Bucket

    @property
    def stopped(self) -> bool:
        return self.bucket == "cull"


def screen(
    candidate: Mapping[str, float], baseline: Mapping[str, float], threshold: float = 1.5
) -> ScreenResult:
    """`candidate`: task -> its K=1 score on the anchor; `baseline`: task -> the vanilla rate
    over K runs. Every anchor task must have both (the denominator is the anchor set)."""
    missing = sorted(set(candidate) ^ set(baseline))
    if missing:
        raise ValueError(f"screen: tasks without both a candidate and a baseline score: {missing}")
    if not candidate:
        raise ValueError("screen: the anchor set is empty")
    tasks = sorted(candidate)
    n = len(tasks)
    delta = sum(candidate[t] - baseline[t] for t in tasks) / n
    sigma = math.sqrt(sum(baseline[t] * (1 - baseline[t]) for t in tasks)) / n
    band = threshold * sigma
    bucket: Bucket = "cull" if delta < -band else "clear_win" if delta > band else "within_band"
    if sigma == 0 and delta == 0:
        bucket = "within_band"
    return ScreenResult(n=n, delta=delta, sigma=sigma, threshold=threshold, bucket=bucket)
