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
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from scipy.special import stdtr  # not scipy.stats: a second less to import, for one function

# Spreads and differences this small are float rounding (0.7 - 0.6 ≠ 0.9 - 0.8), not signal.
TOLERANCE = 1e-12


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


def paired(candidate: pd.DataFrame, parent: pd.DataFrame, *, sigma: float = 2.0) -> PairedStats:
    """Compare two scores tables over the tasks both rated (see the module docstring)."""
    both, alone_candidate, alone_parent = _paired_rates(candidate, parent)
    cand = both["candidate"].to_numpy(dtype=float)
    par = both["parent"].to_numpy(dtype=float)
    d = cand - par
    lift = _mean(d)
    std, se = _spread(d)
    z = _z(lift, se)
    won, lost, tied = _outcome_counts(d)
    return PairedStats(
        n=len(d),
        mean_candidate=_mean(cand),
        mean_parent=_mean(par),
        mean_difference=lift,
        std_difference=std,
        standard_error=se,
        z=z,
        p_value=None if z is None else math.erfc(abs(z) / math.sqrt(2)),
        # Same definedness as z, so both p-values are present or both None.
        p_value_t=None if z is None else _paired_t_p_value(z, len(d) - 1),
        won=won,
        lost=lost,
        tied=tied,
        sigma=sigma,
        credited=z is not None and z >= sigma,
        unpaired_candidate=alone_candidate,
        unpaired_parent=alone_parent,
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


def _spread(d: np.ndarray) -> tuple[float | None, float | None]:
    """Sample stdev of d and the standard error of its mean; None below two tasks."""
    if len(d) < 2:
        return None, None
    std = float(d.std(ddof=1))
    # Snap rounding noise to an exact 0 so "se == 0" below means what it says.
    std = 0.0 if std <= TOLERANCE else std
    return std, std / math.sqrt(len(d))


def _z(lift: float | None, se: float | None) -> float | None:
    # se == 0 makes z ±inf or 0/0: report it undefined rather than infinitely significant.
    if lift is None or se is None or se == 0.0:
        return None
    return lift / se


def _paired_t_p_value(t: float, df: int) -> float:
    """Two-sided p-value of the paired t statistic, which is z (`scipy.stats.ttest_rel`'s)."""
    return float(2 * stdtr(df, -abs(t)))


def _outcome(difference: float) -> str:
    if difference > TOLERANCE:
        return "won"
    if difference < -TOLERANCE:
        return "lost"
    return "tied"


def _outcome_counts(d: np.ndarray) -> tuple[int, int, int]:
    outcomes = [_outcome(x) for x in d]
    return outcomes.count("won"), outcomes.count("lost"), outcomes.count("tied")


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)
