"""A batch's rollouts grouped per task, as the analysis reads them.

Per task: some samples succeeded and some did not (`mixed`: contrast them), all failed
(`all_failed`: compare with the module's earlier success of the task when its memory holds
one, else diagnose), or all succeeded (`all_succeeded`: look for efficiency gains).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from flashrsi_dagster.records import Status, Trajectory

GroupKind = Literal["mixed", "all_failed", "all_succeeded"]


@dataclass(frozen=True)
class TaskGroup:
    task_id: str
    samples: tuple[Trajectory, ...]
    earlier_success: Trajectory | None = None
    """The module's remembered success of this task (kept only for an all-failed task)."""

    @property
    def successes(self) -> tuple[Trajectory, ...]:
        return tuple(t for t in self.samples if t.status == Status.SUCCESS)

    @property
    def failures(self) -> tuple[Trajectory, ...]:
        return tuple(t for t in self.samples if t.status != Status.SUCCESS)

    @property
    def kind(self) -> GroupKind:
        if not self.failures:
            return "all_succeeded"
        return "mixed" if self.successes else "all_failed"

    @property
    def aim(self) -> str:
        """What the analysis should do with this task."""
        if self.kind == "mixed":
            return "contrast the successes with the failures"
        if self.kind == "all_succeeded":
            return "look for efficiency gains"
        if self.earlier_success is not None:
            return "compare the failures with the earlier success"
        return "diagnose the failure"


def group_rollouts(
    rollouts: Iterable[Trajectory], memory: Mapping[str, Trajectory]
) -> list[TaskGroup]:
    """One group per task, in the order tasks first appear; an all-failed task gets its
    earlier success from `memory` (task id -> the module's remembered success)."""
    by_task: dict[str, list[Trajectory]] = {}
    for trajectory in rollouts:
        by_task.setdefault(trajectory.task_id, []).append(trajectory)
    groups = []
    for task_id, samples in by_task.items():
        group = TaskGroup(task_id, tuple(samples))
        if group.kind == "all_failed" and task_id in memory:
            group = TaskGroup(task_id, group.samples, memory[task_id])
        groups.append(group)
    return groups


def remember(
    memory: Mapping[str, Trajectory], rollouts: Iterable[Trajectory]
) -> dict[str, Trajectory]:
    """The memory after a batch: each task's earliest success is kept, and never replaced."""
    updated = dict(memory)
    for trajectory in rollouts:
        if trajectory.status == Status.SUCCESS:
            updated.setdefault(trajectory.task_id, trajectory)
    return updated
