"""Every comparison names its evaluation set; a score on e2 is never a lift on e1.

`basis(candidate, baseline)` says whether two evaluations can be compared task by task and
how to label the comparison. Callers report a lift only when `comparable` is true; otherwise
they show `label` ("different evaluation sets …: not a lift") instead of the figures.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

UNVERSIONED = "unversioned"


class Basis(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    candidate: str | None = Field(description="The candidate's evaluation set (`dev/e2`).")
    baseline: str | None = Field(description="The baseline's evaluation set (`dev/e1`).")
    comparable: bool = Field(description="Both on the same version: a lift can be reported.")
    label: str = Field(description="How the comparison is reported.")


class DifferentEvalSets(ValueError):
    """A lift asked for between evaluations on different evaluation sets."""


def basis(candidate: str | None, baseline: str | None) -> Basis:
    """Comparable only on one version. Both None (records made before sets were versioned)
    compare as before, labelled so; one None and one version never compare."""
    if candidate == baseline:
        name = candidate or UNVERSIONED
        note = "" if candidate else " (recorded before evaluation sets were versioned)"
        return Basis(
            candidate=candidate, baseline=baseline, comparable=True, label=f"on {name}{note}"
        )
    shown = f"{candidate or UNVERSIONED} vs {baseline or UNVERSIONED}"
    return Basis(
        candidate=candidate,
        baseline=baseline,
        comparable=False,
        label=f"different evaluation sets ({shown}): not a lift",
    )


def require_same(candidate: str | None, baseline: str | None) -> Basis:
    """The basis, or `DifferentEvalSets` when the two cannot be compared."""
    found = basis(candidate, baseline)
    if not found.comparable:
        raise DifferentEvalSets(found.label)
    return found
