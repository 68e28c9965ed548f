"""An experiment's lift over its control: its promoted snapshot against the control's, paired
per task (`stats.paired`, whose small-n tests are `stats.small_n`). On dev always, once both
have a promotion; on the sealed test only once both experiments have run theirs — never
before, and nothing is evaluated or unsealed here: both sides are read from the records.

A split on which the two did not run exactly the same tasks is not compared (a lift over
other tasks is no lift); the reason is given instead."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.controls.promoted import Promoted, promoted
from flashrsi_dagster.controls.stored import NoStoredExperiment, open_stored
from flashrsi_dagster.experiment import Experiment
from flashrsi_dagster.records import Trajectory
from flashrsi_dagster.rollouts.scores import scores_frame
from flashrsi_dagster.stats.paired import PairedStats, paired
from flashrsi_dagster.stats.small_n import p_text


class SplitLift(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    split: str
    paired: PairedStats | None = Field(description="The experiment against the control.")
    not_compared: str | None = Field(None, description="Why there is no comparison.")


class Lift(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    experiment: str
    control: str
    experiment_snapshot: str | None
    control_snapshot: str | None
    dev: SplitLift
    test: SplitLift


def lift(experiment: Experiment, control: Experiment) -> Lift:
    mine, theirs = promoted(experiment), promoted(control)
    names = (experiment.config.experiment.name, control.config.experiment.name)
    return Lift(
        experiment=names[0],
        control=names[1],
        experiment_snapshot=mine.snapshot_id if mine else None,
        control_snapshot=theirs.snapshot_id if theirs else None,
        dev=_split("dev", mine, theirs, names),
        test=_split("test", mine, theirs, names),
    )


def _split(
    split: str, mine: Promoted | None, theirs: Promoted | None, names: tuple[str, str]
) -> SplitLift:
    for side, name in ((mine, names[0]), (theirs, names[1])):
        if side is None:
            return SplitLift(split=split, paired=None, not_compared=f"{name} promoted nothing yet")
        if split == "test" and side.test is None:
            why = f"{name} has not run its sealed test: the test split stays sealed"
            return SplitLift(split=split, paired=None, not_compared=why)
    assert mine is not None and theirs is not None
    ours, control = _of(mine, split), _of(theirs, split)
    if not ours or not control:
        who = names[0] if not ours else names[1]
        why = f"{who} has no {split} rollouts of its promoted snapshot on record"
        return SplitLift(split=split, paired=None, not_compared=why)
    if {t.task_id for t in ours} != {t.task_id for t in control}:
        why = f"the two ran different {split} tasks: a lift over other tasks is no lift"
        return SplitLift(split=split, paired=None, not_compared=why)
    return SplitLift(split=split, paired=paired(scores_frame(ours), scores_frame(control)))


def _of(side: Promoted, split: str) -> list[Trajectory]:
    return side.dev if split == "dev" else side.test_rollouts


def lift_lines(result: Lift) -> list[str]:
    """The lift in a few lines, as a summary shows it."""
    lines = [f"lift over the control {result.control}:"]
    for s in (result.dev, result.test):
        p = s.paired
        if p is None:
            lines.append(f"  {s.split}: not compared — {s.not_compared}")
            continue
        lines.append(
            f"  {s.split}: {_f(p.mean_candidate)} vs {_f(p.mean_parent)}, lift "
            f"{_f(p.mean_difference, '+.3f')} over {p.n} tasks (won {p.won}, lost {p.lost}, "
            f"tied {p.tied}); sign p {p_text(p.p_value_sign)}, permutation p "
            f"{p_text(p.p_value_permutation)}, t p {p_text(p.p_value_t)}: {p.verdict}"
        )
    return lines


def _f(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def control_lines(experiment: Experiment) -> list[str]:
    """The lift over the control the experiment's config names (`experiment.control`), for
    its summary; nothing when it names none, one line when that control is not there."""
    name = experiment.config.experiment.control
    if name is None:
        return []
    try:
        control = open_stored(experiment.paths.root.parent, name, "experiment.control")
    except NoStoredExperiment as exc:
        return [f"lift over the control: not reported — {exc}"]
    return lift_lines(lift(experiment, control))
