"""Run the editing check with one agent: each task on a fresh scratch folder, verified by
the host, never by the agent. The verdict is data: an agent that fails (or breaks, or times
out) on a task fails that task with the reason; nothing raises but the host's own faults."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from flashrsi_dagster.agents import Agent
from flashrsi_dagster.algorithms.editing_check.tasks import TASKS, EditingTask
from flashrsi_dagster.records import Record, Status
from flashrsi_dagster.scratch import scratch_dir


class TaskVerdict(BaseModel):
    name: str
    passed: bool
    reason: str | None = Field(None, description="Why it failed, as the host found it.")
    agent_status: str = Field(description="The agent's trajectory status on the task.")


class EditingVerdict(Record):
    kind: Literal["editing_check"] = "editing_check"
    snapshot_id: str | None = Field(
        None, description="The harness checked (None: a role's own agent)."
    )
    passed: bool
    tasks: list[TaskVerdict]

    @property
    def reason(self) -> str:
        failed = [f"{t.name}: {t.reason}" for t in self.tasks if not t.passed]
        return "; ".join(failed) if failed else f"all {len(self.tasks)} editing tasks passed"


def editing_check(
    agent: Agent,
    *,
    snapshot_id: str | None = None,
    task_id: str = "editing-check",
    tasks: tuple[EditingTask, ...] = TASKS,
    log: Callable[[str], None] = print,
) -> EditingVerdict:
    """The agent on every editing task; passed only if the host verified each one."""
    verdicts = [_one(agent, task, f"{task_id}-{task.name}") for task in tasks]
    verdict = EditingVerdict(
        snapshot_id=snapshot_id, passed=all(v.passed for v in verdicts), tasks=verdicts
    )
    log(f"editing check{f' of {snapshot_id[:12]}' if snapshot_id else ''}: {verdict.reason}")
    return verdict


def _one(agent: Agent, task: EditingTask, task_id: str) -> TaskVerdict:
    with scratch_dir("editing-check-") as tmp:
        folder = tmp / "work"
        _lay_out(folder, task)
        trajectory = agent.edit(folder, task.instruction, task_id=task_id)
        reason = task.verify(folder)
    if reason is None and trajectory.status not in (Status.SUCCESS, Status.FAILURE):
        reason = f"the agent ended with {trajectory.status}"
    if reason is not None and trajectory.error is not None:
        reason += f" (agent: {trajectory.error.message[:200]})"
    return TaskVerdict(
        name=task.name, passed=reason is None, reason=reason, agent_status=str(trajectory.status)
    )


def _lay_out(folder: Path, task: EditingTask) -> None:
    folder.mkdir(parents=True)
    for path, text in task.given.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
