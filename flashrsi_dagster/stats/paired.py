"""The paired comparison of two scores tables, task by task: the lift and its 2-sigma credit.

Each table is reduced to one rate per task (its mean score over attempts), and only tasks in
both tables are paired. Pairing removes task difficulty from the noise:

    d_i = candidate_i - parent_i,   lift = mean(d),   se = stdev(d) / √n,   z = lift / se

A candidate is *credited* when z ≥ sigma (the paired 2-sigma credit). That is a separate question
from navigation (is the candidate's mean above the parent's?), which callers decide themselves.

Undefined statistics are None — never 0, never NaN:

- n == 0 (nothing paired): every mean, the lift and every statistic are None.
- n == 1: the lift is defined but the spread is not: std, se, z and both p-values are None.
- se == 0 (every task moved by the same amount): z would be ±inf, or 0/0 when nothing moved.
  Neither is usable evidence, so z and both p-values are None and the candidate is not credited.

A task missing from one table is counted in `unpaired_*`, never scored 0 on the missing side.

Beside z and its label, the tests that hold at small n (`stats.small_n`): the exact sign
test, the sign-flip permutation test (exact up to 20 tasks, seeded Monte Carlo above) and the
paired t — z is the paired t statistic, `p_value_t` its p — and the `verdict` they give
(credited / regressed / indecisive at `alpha`; every task won is credited, undefined is
indecisive). The verdict is a label too, beside `credited`; neither decides navigation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.stats.small_n import (
    ALPHA,
    DRAWS,
    SEED,
    TOLERANCE,
    Method,
    Verdict,
    difference_tests,
    p_text,
)


class PairedStats(BaseModel):
    """The paired comparison of a candidate's scores with its parent's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int = Field(ge=0, description="Tasks with a rate in both tables.")
    mean_candidate: float | None = Field(description="Candidate's mean rate over paired tasks.")
    mean_parent: float | None = Field(description="Parent's mean rate over paired tasks.")
    mean_difference: float | None = Field(description="The lift: mean of d_i over paired tasks.")
    std_difference: float | None = Field(description="Sample stdev of d (ddof=1); None if n < 2.")
    standard_error: float | None = Field(description="std_difference / √n; None if n < 2.")
    z: float | None = Field(description="lift / se; None if n < 2 or se == 0.")
    p_value: float | None = Field(description="Two-sided normal p-value of z.")
    p_value_t: float | None = Field(description="Two-sided paired t-test p-value (n - 1 df).")
    won: int = Field(ge=0, description="Paired tasks where the candidate scored higher.")
    lost: int = Field(ge=0, description="Paired tasks where the candidate scored lower.")
    tied: int = Field(ge=0, description="Paired tasks where both scored the same.")
    sigma: float = Field(gt=0, description="The z threshold for credit.")
    credited: bool = Field(description="z ≥ sigma; False when z is None.")
    unpaired_candidate: int = Field(ge=0, description="Tasks only the candidate table rated.")
    unpaired_parent: int = Field(ge=0, description="Tasks only the parent table rated.")
    p_value_sign: float | None = Field(
        description="Exact two-sided sign test p, ties dropped; None if all tied."
    )
    p_value_permutation: float | None = Field(
        description="Two-sided sign-flip permutation p of the lift; None if n == 0."
    )
    permutation_method: Method | None = Field(
        description="exact (all 2^n sign flips) or monte_carlo; None if n == 0."
    )
    permutation_resamples: int = Field(
        ge=0, description="Sign assignments counted: 2^n, or the Monte Carlo draws."
    )
    permutation_seed: int | None = Field(
        description="The Monte Carlo draws' seed; None when exact."
    )
    alpha: float = Field(gt=0, lt=1, description="The verdict's level.")
    verdict: Verdict = Field(description="credited / regressed / indecisive (stats.small_n).")
    verdict_reason: str = Field(description="Which rule of the verdict applied.")

    @property
    def lift(self) -> float | None:
        return self.mean_difference


def task_rates(frame: pd.DataFrame) -> pd.Series:
    """Each task's mean score over its attempts, indexed and sorted by task_id.

    A task with an unscored (NaN) attempt has no rate and is left out: averaging the other
    attempts would quietly shrink its denominator.
    """
    scores = frame.groupby("task_id")["score"]
    complete = scores.count() == scores.size()
    return scores.mean()[complete].astype(float)


def paired(
    candidate: pd.DataFrame,
    parent: pd.DataFrame,
    *,
    sigma: float = 2.0,
    alpha: float = ALPHA,
    draws: int = DRAWS,
    seed: int = SEED,
) -> PairedStats:
    """Compare two scores tables over the tasks both rated (see the module docstring);
    `alpha`, `draws` and `seed` are the small-n verdict's (`small_n.difference_tests`)."""
    both, alone_candidate, alone_parent = _paired_rates(candidate, parent)
    cand = both["candidate"].to_numpy(dtype=float)
    par = both["parent"].to_numpy(dtype=float)
    tests = difference_tests(cand - par, alpha=alpha, draws=draws, seed=seed)
    t = tests.t
    z = t.statistic
    return PairedStats(
        n=tests.n,
        mean_candidate=_mean(cand),
        mean_parent=_mean(par),
        mean_difference=t.mean,
        std_difference=t.std,
        standard_error=t.standard_error,
        z=z,
        p_value=None if z is None else math.erfc(abs(z) / math.sqrt(2)),
        # Same definedness as z, so both p-values are present or both None.
        p_value_t=t.p_value,
        won=tests.sign.wins,
        lost=tests.sign.losses,
        tied=tests.sign.ties,
        sigma=sigma,
        credited=z is not None and z >= sigma,
        unpaired_candidate=alone_candidate,
        unpaired_parent=alone_parent,
        p_value_sign=tests.sign.p_value,
        p_value_permutation=tests.permutation.p_value,
        permutation_method=tests.permutation.method,
        permutation_resamples=tests.permutation.resamples,
        permutation_seed=tests.permutation.seed,
        alpha=alpha,
        verdict=tests.verdict,
        verdict_reason=tests.reason,
    )


def per_task_table(candidate: pd.DataFrame, parent: pd.DataFrame) -> pd.DataFrame:
    """One row per paired task (task_id, parent, candidate, difference, outcome), losses first."""
    both, _, _ = _paired_rates(candidate, parent)
    table = both.assign(difference=both["candidate"] - both["parent"])
    outcomes = [_outcome(d) for d in table["difference"]]
    table["outcome"] = pd.Series(outcomes, index=table.index, dtype="str")
    table = table.rename_axis("task_id").reset_index()
    return table.sort_values(["difference", "task_id"], ignore_index=True)


def to_markdown(stats: PairedStats) -> str:
    """The headline numbers as a two-column markdown table; undefined values read "n/a"."""
    verdict = "credited" if stats.credited else "not credited"
    rows = [
        ("lift", _fmt(stats.mean_difference, "+.3f")),
        ("z", f"{_fmt(stats.z, '.2f')} ({verdict} at z ≥ {stats.sigma:g})"),
        ("p (normal / paired t)", f"{_fmt(stats.p_value, '.3g')} / {_fmt(stats.p_value_t, '.3g')}"),
        ("p (sign / permutation)", f"{p_text(stats.p_value_sign)} / {_permutation_text(stats)}"),
        ("verdict", f"{stats.verdict} at alpha = {stats.alpha:g}: {stats.verdict_reason}"),
        ("parent → candidate", f"{_fmt(stats.mean_parent)} → {_fmt(stats.mean_candidate)}"),
        ("won / lost / tied", f"{stats.won} / {stats.lost} / {stats.tied}"),
        ("std / se of differences", f"{_fmt(stats.std_difference)} / {_fmt(stats.standard_error)}"),
        ("paired tasks", str(stats.n)),
        ("unpaired (candidate / parent)", f"{stats.unpaired_candidate} / {stats.unpaired_parent}"),
    ]
    return markdown_table(["statistic", "value"], rows)


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A GitHub-style markdown table.

    Formatted by hand: pandas' `to_markdown` needs tabulate, which only arrives as a transitive
    dependency of dagster, and the engine must not lean on the Dagster layer's dependencies.
    """
    lines = [_markdown_row(headers), _markdown_row(["---"] * len(headers))]
    lines += [_markdown_row(row) for row in rows]
    return "\n".join(lines) + "\n"


def _markdown_row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(cell).replace("|", r"\|") for cell in cells) + " |"


def _paired_rates(candidate: pd.DataFrame, parent: pd.DataFrame) -> tuple[pd.DataFrame, int, int]:
    """The rates of tasks in both tables, and how many tasks each table rated alone."""
    cand, par = task_rates(candidate), task_rates(parent)
    both = pd.concat({"parent": par, "candidate": cand}, axis=1, join="inner").sort_index()
    return both, len(cand) - len(both), len(par) - len(both)


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if len(values) else None


def _outcome(difference: float) -> str:
    if difference > TOLERANCE:
        return "won"
    if difference < -TOLERANCE:
        return "lost"
    return "tied"


def _permutation_text(stats: PairedStats) -> str:
    if stats.permutation_method == "exact":
        return f"{p_text(stats.p_value_permutation)} (exact, 2^{stats.n} sign flips)"
    if stats.permutation_method == "monte_carlo":
        draws, seed = stats.permutation_resamples, stats.permutation_seed
        return f"{p_text(stats.p_value_permutation)} (Monte Carlo, {draws} draws, seed {seed})"
    return p_text(stats.p_value_permutation)


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)
