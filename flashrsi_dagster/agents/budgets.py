"""A role's count budgets (`max_turns`, `max_tool_calls`) as every adapter enforces them.

Each budget is None, 0 or n > 0 (`config.models.RoleConfig`):
- None: no count limit; permissions, the run's timeout and cancellation, and the completion
  checks still apply.
- 0: none. `max_tool_calls: 0`: no tool may run (never read as unlimited); `max_turns: 0`:
  no tool-using turn, the model is asked only for its forced final answer (tools off).
- n: a hard stop after n: a tool call past the budget is refused (not run; the model reads
  that the budget is spent) and the run ends with the forced final answer, one last model
  call with tools off, counted in usage.

Who enforces what: the harness applies them as it runs (MiniAgent: `runtime/budget.py`, a
protected file); since a harness is evolvable code, the model gateway refuses a run's model
calls past `max_model_calls` (`max_turns + 1`: the turns and the forced answer; HTTP 403,
`RunUsage.over_budget`), and `budget_verdict` checks what the run reports against the same
budgets. Both make the run an error (`RunBudgetExceeded`), never an infrastructure fault.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.gateway import RunUsage
from flashrsi_dagster.records import ErrorInfo, Status, Trajectory

OVER_BUDGET = "RunBudgetExceeded"
"""The error type of a run that went past its count budgets."""
STOPS = ("max_turns", "max_tool_calls")


@dataclass(frozen=True)
class Budget:
    max_turns: int | None
    max_tool_calls: int | None

    @classmethod
    def of(cls, config: RoleConfig) -> Budget:
        return cls(config.max_turns, config.max_tool_calls)

    @property
    def max_model_calls(self) -> int | None:
        """Model calls a run may have answered: its tool-using turns and the forced final
        answer; None: no count limit (a `max_tool_calls` alone bounds no model call)."""
        return None if self.max_turns is None else self.max_turns + 1

    def payload(self) -> dict[str, int | None]:
        """The budgets for a harness's JSON input: None stays null (no count limit)."""
        return {"max_turns": self.max_turns, "max_tool_calls": self.max_tool_calls}

    def overrun(self, model_calls: int, tool_calls: int) -> str | None:
        """Why counts a run reports break its budgets, or None."""
        calls = self.max_model_calls
        if calls is not None and model_calls > calls:
            return (
                f"the run made {model_calls} model calls, over max_turns={self.max_turns} "
                "and the forced final answer"
            )
        if self.max_tool_calls is not None and tool_calls > self.max_tool_calls:
            return f"the run ran {tool_calls} tool calls, over max_tool_calls={self.max_tool_calls}"
        return None


def budget_verdict(
    trajectory: Trajectory, budget: Budget, usage: RunUsage | None, stop: Any = None
) -> Trajectory:
    """The trajectory held to its budgets: an error when the gateway refused a model call
    past them or the reported counts go over them; `metadata["budget"]` says which budget
    stopped the run (`stop`, the harness's word, kept only when it names one of `STOPS`)."""
    metadata = dict(trajectory.metadata)
    refused = list(usage.over_budget) if usage is not None else []
    counts = trajectory.usage
    # The gateway's count of answered calls is the framework's own; the harness's may lie.
    calls = max(counts.turns, usage.answered if usage is not None else 0)
    overrun = budget.overrun(calls, counts.tool_calls)
    stopped = stop if stop in STOPS else None
    if stopped or refused or overrun:
        metadata["budget"] = {**budget.payload(), "stopped_by": stopped}
    update: dict[str, Any] = {"metadata": metadata}
    if refused or overrun:
        message = refused[0] if refused else overrun
        metadata["budget"]["stopped_by"] = "gateway" if refused else "adapter"
        update |= {
            "status": Status.ERROR,
            "error": ErrorInfo(type=OVER_BUDGET, message=f"over its budget: {message}"),
        }
    return trajectory.model_copy(update=update)
