"""Tests on paired task differences that hold at small n, and the verdict they give.

The input is one difference per task, d_i = candidate_i - parent_i (rates in [0, 1], so
|d_i| ≤ 1). Three tests of "the candidate is no different from its parent", all two-sided:

- **Sign test** (exact). Ties (d_i = 0) are dropped; of the N = wins + losses left, the wins
  are Binomial(N, 1/2) under the null, and

      p = min(1, 2 · Σ_{i ≤ min(wins, losses)} C(N, i) / 2^N)

  computed in integers (`scipy.stats.binomtest(wins, N).pvalue`).
- **Permutation test** (sign flips). Under the null each d_i is symmetric about 0, so every
  assignment s ∈ {-1, +1}^n of signs is as likely as the observed one. With T(s) = Σ s_i d_i,

      p = #{s : |T(s)| ≥ |T(1)|} / 2^n                    (exact, all 2^n assignments, n ≤ 20)
      p = (1 + #{b : |T(s_b)| ≥ |T(1)|}) / (draws + 1)    (Monte Carlo, `draws` seeded draws)

  The exact p is `scipy.stats.permutation_test` with `permutation_type='samples'`; the Monte
  Carlo one counts the observed assignment once, so it is never 0. Its statistic is the mean
  difference, the same figure as the lift navigation reads.
- **Paired t**: t = mean(d) / (stdev(d) / √n) on n - 1 degrees of freedom (`ttest_rel`). It
  is the seed's z, read against Student's t rather than the normal.

The verdict (`decide`) is one of "credited", "regressed" or "indecisive", in this order:

1. any NaN difference, or fewer than `MIN_TASKS` (2) differences: indecisive;
2. every task won (all d_i > 0): credited; every task lost: regressed — at n ≤ 5 no exact
   test can reach p ≤ 0.05, and winning every task is as much as a candidate can show;
3. permutation p ≤ alpha: credited when the lift is positive, regressed when negative;
4. otherwise indecisive (every difference zero lands here: p = 1).

It is a label beside the seed's 2-sigma credit (`PairedStats.credited`), which it does not
replace; navigation (is the mean above the parent's?) stays the caller's.

Undefined figures are None, never 0 or NaN: a sign test with no wins and no losses, a t with
n < 2 or stdev(d) = 0, any test of an empty input. A NaN difference (an unscored task) makes
every figure None and the verdict indecisive, with the count in `nan`: dropping the task would
shrink the denominator — and might drop the very task the candidate lost — while raising
would turn one task's failure into a systemic fault. (Scores tables never get here with a
NaN: `paired.task_rates` leaves such a task unpaired, and counts it.)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy.special import stdtr  # not scipy.stats: the code location must not import it

Verdict = Literal["credited", "regressed", "indecisive"]
Method = Literal["exact", "monte_carlo"]

ALPHA = 0.05
"""The significance level of the verdict, two-sided (a parameter wherever it is used)."""
MIN_TASKS = 2
"""Below this many differences there is no comparison: the verdict is indecisive."""
EXACT_MAX_N = 20
"""Up to this many tasks the permutation test enumerates all 2^n sign assignments."""
EXACT_LIMIT = 30
"""The largest `exact_max_n` a caller may ask for: 2^30 assignments already take minutes."""
DRAWS = 100_000
"""Random sign assignments of the Monte Carlo test (its p has a standard error ≤ 0.0016)."""
SEED = 0
"""The Monte Carlo test's default seed: the same input gives the same p."""
TOLERANCE = 1e-12
"""Differences and spreads this small are float rounding (0.7 - 0.6 ≠ 0.9 - 0.8), not signal."""
_CHUNK = 1 << 20  # signs (assignments x tasks) per matrix product: 8 MB of floats


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SignTest(_Frozen):
    """The exact two-sided sign test: wins against losses, ties dropped."""

    wins: int = Field(ge=0, description="Differences above 0 (beyond float rounding).")
    losses: int = Field(ge=0, description="Differences below 0.")
    ties: int = Field(ge=0, description="Differences of 0, dropped from the test.")
    p_value: float | None = Field(description="Two-sided binomial p; None if no wins or losses.")


class PermutationTest(_Frozen):
    """The sign-flip permutation test of the mean difference."""

    n: int = Field(ge=0, description="Differences tested.")
    statistic: float | None = Field(description="The mean difference; None if n == 0.")
    p_value: float | None = Field(description="Two-sided p; None if n == 0 or any NaN.")
    method: Method | None = Field(description="How p was found; None when it was not.")
    resamples: int = Field(ge=0, description="Assignments counted: 2^n (exact) or the draws.")
    seed: int | None = Field(description="The Monte Carlo draws' seed; None when exact.")


class TTest(_Frozen):
    """The paired (one-sample) t-test of the mean difference against 0."""

    n: int = Field(ge=0, description="Differences tested.")
    mean: float | None = Field(description="Mean difference; None if n == 0.")
    std: float | None = Field(description="Sample stdev (ddof=1), rounding snapped to 0; n ≥ 2.")
    standard_error: float | None = Field(description="std / √n; None if n < 2.")
    statistic: float | None = Field(description="mean / se; None if n < 2 or se == 0.")
    df: int | None = Field(description="Degrees of freedom, n - 1; None if n < 2.")
    p_value: float | None = Field(description="Two-sided Student-t p; None with the statistic.")


class DifferenceTests(_Frozen):
    """All three tests of one set of paired differences, and the verdict they give."""

    n: int = Field(ge=0, description="Differences given, NaN ones included.")
    nan: int = Field(ge=0, description="NaN differences; any makes every figure None.")
    sign: SignTest = Field(description="The exact sign test.")
    permutation: PermutationTest = Field(description="The sign-flip permutation test.")
    t: TTest = Field(description="The paired t-test.")
    alpha: float = Field(gt=0, lt=1, description="The verdict's significance level.")
    verdict: Verdict = Field(description="credited / regressed / indecisive (module docstring).")
    reason: str = Field(description="Which rule of the verdict applied, in words.")


def sign_test(d: Sequence[float]) -> SignTest:
    """The exact two-sided sign test of `d` (see the module docstring)."""
    x = as_differences(d)
    wins, losses = int((x > 0).sum()), int((x < 0).sum())
    ties = int((x == 0).sum())
    defined = wins + losses > 0 and not np.isnan(x).any()
    return SignTest(
        wins=wins,
        losses=losses,
        ties=ties,
        p_value=_binomial_two_sided(wins, losses) if defined else None,
    )


def permutation_test(
    d: Sequence[float],
    *,
    draws: int = DRAWS,
    seed: int = SEED,
    exact_max_n: int = EXACT_MAX_N,
) -> PermutationTest:
    """The two-sided sign-flip permutation test of mean(d): exact up to `exact_max_n` tasks,
    otherwise over `draws` random assignments seeded by `seed` (see the module docstring)."""
    x = as_differences(d)
    n = len(x)
    if n == 0 or np.isnan(x).any():
        return PermutationTest(
            n=n, statistic=_mean(x), p_value=None, method=None, resamples=0, seed=None
        )
    flips = SignFlips(n, draws=draws, seed=seed, exact_max_n=exact_max_n)
    exceed, _ = flips.exceedances(x[:, None])
    return PermutationTest(
        n=n,
        statistic=_mean(x),
        p_value=flips.p_value(int(exceed[0])),
        method=flips.method,
        resamples=flips.resamples,
        seed=flips.seed,
    )


def paired_t(d: Sequence[float]) -> TTest:
    """The paired t statistic of `d` and its two-sided p (see the module docstring)."""
    x = as_differences(d)
    n = len(x)
    if np.isnan(x).any():
        return TTest(
            n=n, mean=None, std=None, standard_error=None, statistic=None, df=None, p_value=None
        )
    mean = _mean(x)
    std = se = t = p = None
    if n >= 2:
        std = float(x.std(ddof=1))
        std = 0.0 if std <= TOLERANCE else std  # so that "se == 0" means what it says
        se = std / math.sqrt(n)
    if mean is not None and se:  # se == 0 makes t ±inf or 0/0: undefined, not significant
        t = mean / se
        p = float(2 * stdtr(n - 1, -abs(t)))
    return TTest(
        n=n,
        mean=mean,
        std=std,
        standard_error=se,
        statistic=t,
        df=n - 1 if n >= 2 else None,
        p_value=p,
    )


def decide(
    *,
    n: int,
    nan: int,
    wins: int,
    losses: int,
    lift: float | None,
    p_value: float | None,
    alpha: float = ALPHA,
) -> tuple[Verdict, str]:
    """The verdict and the rule that gave it, from the counts, the lift and the permutation
    p (the rules, in order, are in the module docstring)."""
    if nan:
        return "indecisive", f"{nan} of {n} differences are NaN: the comparison is undefined"
    if n < MIN_TASKS:
        return "indecisive", f"{n} paired task(s): fewer than {MIN_TASKS} is no comparison"
    if wins == n:
        return "credited", f"won every one of the {n} tasks"
    if losses == n:
        return "regressed", f"lost every one of the {n} tasks"
    if p_value is None or lift is None or p_value > alpha or lift == 0:
        return "indecisive", f"permutation p {p_text(p_value)} > {alpha:g}"
    direction = "credited" if lift > 0 else "regressed"
    return direction, f"permutation p {p_text(p_value)} ≤ {alpha:g}, lift {lift:+.3g}"


def difference_tests(
    d: Sequence[float],
    *,
    alpha: float = ALPHA,
    draws: int = DRAWS,
    seed: int = SEED,
    exact_max_n: int = EXACT_MAX_N,
) -> DifferenceTests:
    """The sign, permutation and paired t tests of `d`, and the verdict."""
    x = as_differences(d)
    nan = int(np.isnan(x).sum())
    sign = sign_test(x)
    perm = permutation_test(x, draws=draws, seed=seed, exact_max_n=exact_max_n)
    verdict, reason = decide(
        n=len(x),
        nan=nan,
        wins=sign.wins,
        losses=sign.losses,
        lift=perm.statistic,
        p_value=perm.p_value,
        alpha=alpha,
    )
    return DifferenceTests(
        n=len(x),
        nan=nan,
        sign=sign,
        permutation=perm,
        t=paired_t(x),
        alpha=alpha,
        verdict=verdict,
        reason=reason,
    )


class SignFlips:
    """The sign assignments a permutation test counts over, for n tasks: all 2^n when
    n ≤ `exact_max_n`, else `draws` random ones from `numpy.random.default_rng(seed)`.
    Shared by the single test and the family's max statistic, so both see the same draws."""

    def __init__(self, n: int, *, draws: int, seed: int, exact_max_n: int) -> None:
        if draws < 1:
            raise ValueError(f"draws must be >= 1, got {draws}")
        if exact_max_n > EXACT_LIMIT:
            raise ValueError(f"exact_max_n must be <= {EXACT_LIMIT}, got {exact_max_n}")
        self.n = n
        self.method: Method = "exact" if n <= exact_max_n else "monte_carlo"
        self.resamples = 2**n if self.method == "exact" else draws
        self.seed = None if self.method == "exact" else seed

    def chunks(self) -> Iterator[np.ndarray]:
        """The assignments as ±1 matrices, one row each, a chunk at a time."""
        bits = np.arange(self.n)
        rows = max(1, _CHUNK // max(self.n, 1))
        if self.method == "exact":
            for start in range(0, self.resamples, rows):
                k = np.arange(start, min(start + rows, self.resamples), dtype=np.int64)
                yield 1.0 - 2.0 * ((k[:, None] >> bits) & 1)
            return
        rng = np.random.default_rng(self.seed)
        for start in range(0, self.resamples, rows):
            size = min(rows, self.resamples - start)
            yield 1.0 - 2.0 * rng.integers(0, 2, size=(size, self.n), dtype=np.int8)

    def exceedances(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For differences `d` (tasks x candidates, no NaN): per candidate j, how many
        assignments s give |T_j(s)| ≥ |T_j(1)|, and how many give max_k |T_k(s)| ≥ |T_j(1)|
        (T_j(s) = Σ_i s_i d_ij; a relative 1e-12 of Σ|d| absorbs rounding)."""
        observed = np.abs(d.sum(axis=0))
        threshold = observed - TOLERANCE * np.abs(d).sum(axis=0)
        each = np.zeros(d.shape[1], dtype=np.int64)
        of_max = np.zeros(d.shape[1], dtype=np.int64)
        for signs in self.chunks():
            null = np.abs(signs @ d)
            each += (null >= threshold).sum(axis=0)
            of_max += (null.max(axis=1)[:, None] >= threshold).sum(axis=0)
        return each, of_max

    def p_value(self, exceed: int) -> float:
        """The p of a count from `exceedances` (the observed assignment counted once)."""
        if self.method == "exact":
            return exceed / self.resamples
        return (1 + exceed) / (self.resamples + 1)


def as_differences(d: Sequence[float]) -> np.ndarray:
    """`d` as a flat float array, rounding-sized differences snapped to an exact 0 (a tie)."""
    x = np.asarray(d, dtype=float).reshape(-1)
    return np.where(np.abs(x) <= TOLERANCE, 0.0, x)


def _mean(x: np.ndarray) -> float | None:
    return float(x.mean()) if len(x) and not np.isnan(x).any() else None


def _binomial_two_sided(wins: int, losses: int) -> float:
    """P(a Binomial(N, 1/2) count is as far from N/2 as `wins`), in exact integers."""
    total = wins + losses
    tail = sum(math.comb(total, i) for i in range(min(wins, losses) + 1))
    return min(1.0, 2 * tail / 2**total)


def p_text(value: float | None) -> str:
    """A p-value to 3 significant digits, or "n/a"."""
    return "n/a" if value is None else format(value, ".3g")
