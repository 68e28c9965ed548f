"""Which rollouts of a round a researcher gets to read: one that passed, one that failed."""

from __future__ import annotations

from collections.abc import Iterable

from flashrsi_dagster.records import Status, Trajectory

FAILURE_PREFERENCE = (Status.FAILURE, Status.ERROR, Status.TIMEOUT, Status.INFRA_ERROR)
"""Which failure is shown first. A wrong answer is a whole run in which the harness led the
agent astray: the most to learn from, and what the failure map's counts cannot show. The
agent's own breakage (an exception, malformed output, the turn limit) comes next: the failure
map already groups those by error type. A timeout shows a run cut off. An infrastructure
failure says nothing about the harness, so it is shown only when nothing else failed."""


def pick_examples(
    trajectories: Iterable[Trajectory],
) -> tuple[Trajectory | None, Trajectory | None]:
    """One passing (status success) and one failing rollout, None where there is none.

    Pass the round's final rollouts. Among candidates of equal preference, a rollout in which
    the agent said something comes before one without (nothing to read), then the first by
    task id, attempt and rerun: the same records always give the same choice.
    """
    rollouts = list(trajectories)
    passing = [t for t in rollouts if t.status == Status.SUCCESS]
    failing = [t for t in rollouts if t.status != Status.SUCCESS]
    return (
        min(passing, key=_order, default=None),
        min(failing, key=lambda t: (_preference(t.status), *_order(t)), default=None),
    )


def _preference(status: Status) -> int:
    """A status this module does not know yet (a new one) comes last, rather than failing."""
    return (
        FAILURE_PREFERENCE.index(status)
        if status in FAILURE_PREFERENCE
        else len(FAILURE_PREFERENCE)
    )


def _order(t: Trajectory) -> tuple[bool, str, int, int]:
    rerun = t.metadata.get("rerun", 0)
    return (not _readable(t), t.task_id, t.attempt, rerun if isinstance(rerun, int) else 0)


def _readable(t: Trajectory) -> bool:
    return any(message.get("role") == "assistant" for message in t.messages)
