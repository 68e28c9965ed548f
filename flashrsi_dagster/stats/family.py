"""When the best of many candidates is picked: its p, corrected for the picking.

The input is one column of paired differences per candidate, d_ij = candidate_j,i - parent_i,
all on the same tasks i in the same order. Each candidate's raw p is its own sign-flip
permutation test (`small_n.permutation_test`). Beside it, two corrections for having tried m
candidates, both two-sided:

- **Holm-Bonferroni** over the m raw p-values. Sorted p_(1) ≤ … ≤ p_(m),

      p_holm_(i) = max_{j ≤ i} min(1, (m - j + 1) · p_(j))

  A candidate whose raw p is undefined (None) still counts in m, as p = 1 (it was tried),
  and its adjusted p stays None.
- **Max statistic** (single-step, Westfall-Young): each candidate's statistic against the
  distribution of the largest over all candidates, the tasks' signs flipped together (under
  the null each task's vector of differences is symmetric about 0). With T_j(s) = Σ_i s_i d_ij,

      p_max_j = #{s : max_k |T_k(s)| ≥ |T_j(1)|} / 2^n               (exact, n ≤ 20)
      p_max_j = (1 + #{b : max_k |T_k(s_b)| ≥ |T_j(1)|}) / (draws + 1)  (Monte Carlo)

  It uses the mean difference, the statistic the best is picked by, so for the best it
  answers "would the best of m unchanged candidates have looked this good?". It is never
  below the raw p, and with one candidate it is the raw p. Any NaN difference makes every
  max-statistic p None (the family is not defined); the other candidates keep their raw p.

The best is the candidate with the highest lift (the first on a tie); a candidate with a NaN
difference or no tasks has no lift and is never the best.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.stats.paired import markdown_table
from flashrsi_dagster.stats.small_n import (
    DRAWS,
    EXACT_MAX_N,
    SEED,
    Method,
    SignFlips,
    as_differences,
    p_text,
)


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CandidateTest(_Frozen):
    """One candidate of a family: its lift, its raw p and both corrected ones."""

    name: str = Field(description="The candidate, as named in the input.")
    nan: int = Field(ge=0, description="Its NaN differences; any makes its figures None.")
    lift: float | None = Field(description="Mean difference; None if no tasks or any NaN.")
    p_value: float | None = Field(description="Raw two-sided sign-flip permutation p.")
    p_holm: float | None = Field(description="Holm-Bonferroni adjusted p over the family.")
    p_max_statistic: float | None = Field(description="Max-statistic permutation p.")


class FamilyTests(_Frozen):
    """The candidates of a family, in input order, and which of them is the best."""

    n: int = Field(ge=0, description="Tasks: differences per candidate.")
    candidates: list[CandidateTest] = Field(description="One per candidate, in input order.")
    best: str | None = Field(description="The highest lift's candidate; None if none has one.")
    method: Method | None = Field(description="How the permutation p-values were found.")
    resamples: int = Field(ge=0, description="Assignments counted: 2^n (exact) or the draws.")
    seed: int | None = Field(description="The Monte Carlo draws' seed; None when exact.")

    @property
    def best_test(self) -> CandidateTest | None:
        return next((c for c in self.candidates if c.name == self.best), None)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values, in input order (see the module docstring)."""
    m = len(p_values)
    filled = [1.0 if p is None else float(p) for p in p_values]
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: filled[i])):
        running = max(running, min(1.0, (m - rank) * filled[index]))
        adjusted[index] = running
    return [None if p is None else a for p, a in zip(p_values, adjusted, strict=True)]


def family_tests(
    differences: Mapping[str, Sequence[float]],
    *,
    draws: int = DRAWS,
    seed: int = SEED,
    exact_max_n: int = EXACT_MAX_N,
) -> FamilyTests:
    """Raw, Holm and max-statistic p-values for every candidate, and the best by lift.

    Raises ValueError when the candidates do not have the same number of differences: they
    must be on the same tasks (a missing task is a NaN, not a shorter column)."""
    names = list(differences)
    columns = [as_differences(differences[name]) for name in names]
    if len({len(c) for c in columns}) > 1:
        lengths = {name: len(c) for name, c in zip(names, columns, strict=True)}
        raise ValueError(f"candidates must share their tasks; differences per candidate: {lengths}")
    n = len(columns[0]) if columns else 0
    matrix = np.column_stack(columns) if columns else np.zeros((0, 0))
    clean = ~np.isnan(matrix).any(axis=0)
    raw: list[float | None] = [None] * len(names)
    of_max: list[float | None] = [None] * len(names)
    flips = SignFlips(n, draws=draws, seed=seed, exact_max_n=exact_max_n) if n else None
    if flips is not None and clean.any():
        each, beyond_max = flips.exceedances(matrix[:, clean])
        for position, index in enumerate(np.flatnonzero(clean)):
            raw[index] = flips.p_value(int(each[position]))
            if clean.all():
                of_max[index] = flips.p_value(int(beyond_max[position]))
    lifts = [float(c.mean()) if n and ok else None for c, ok in zip(columns, clean, strict=True)]
    candidates = [
        CandidateTest(
            name=name,
            nan=int(np.isnan(column).sum()),
            lift=lift,
            p_value=p,
            p_holm=adjusted,
            p_max_statistic=p_max,
        )
        for name, column, lift, p, adjusted, p_max in zip(
            names, columns, lifts, raw, holm(raw), of_max, strict=True
        )
    ]
    defined = [c for c in candidates if c.lift is not None]
    return FamilyTests(
        n=n,
        candidates=candidates,
        best=max(defined, key=lambda c: c.lift).name if defined else None,  # type: ignore[arg-type, return-value]
        method=flips.method if flips and clean.any() else None,
        resamples=flips.resamples if flips and clean.any() else 0,
        seed=flips.seed if flips and clean.any() else None,
    )


def family_markdown(family: FamilyTests) -> str:
    """The family as a markdown table, the best marked; undefined values read "n/a"."""
    rows = [
        (
            f"**{c.name}** (best)" if c.name == family.best else c.name,
            "n/a" if c.lift is None else f"{c.lift:+.3f}",
            p_text(c.p_value),
            p_text(c.p_holm),
            p_text(c.p_max_statistic),
        )
        for c in family.candidates
    ]
    return markdown_table(["candidate", "lift", "p", "p (Holm)", "p (max statistic)"], rows)
