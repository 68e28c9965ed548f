"""The run's count budgets: tool-using turns (`max_turns`) and tool calls (`max_tool_calls`).

Each is None, 0 or n > 0, and the three mean different things:
- None: no count limit; the run goes on until the model answers or the run is cancelled.
- 0: none at all, never read as "unlimited". No tool-using turn (`max_turns: 0`: the model is
  asked only for its final answer, tools off); no tool runs (`max_tool_calls: 0`: a call the
  model makes is refused).
- n: a hard stop after n. A tool call past the budget is not run: the model gets a tool result
  saying the budget is spent. Then, as after the n-th turn, the run ends with the forced final
  answer: one last model call with tools off (counted in usage like any call).

The adapter protects this file (evolved code cannot change it), checks the counts the run
reports against the same budgets, and the model gateway refuses model calls past
`max_turns + 1`: a harness that ignores this module is stopped there.
"""

from __future__ import annotations

from typing import Any

FORCED_ANSWER = (
    "Your budget of {limit} is spent: no tool can run any more. Reply now with your final "
    "answer as plain text, from what you have done so far."
)


class Budget:
    def __init__(self, max_turns: int | None, max_tool_calls: int | None) -> None:
        for name, value in (("max_turns", max_turns), ("max_tool_calls", max_tool_calls)):
            if value is not None and (type(value) is not int or value < 0):
                raise ValueError(f"{name} must be None or a count >= 0, got {value!r}")
        self.max_turns = max_turns
        self.max_tool_calls = max_tool_calls
        self.turns = 0
        self.tool_calls = 0
        self.refused = 0
        self.stopped_by: str | None = None
        """`max_turns` or `max_tool_calls` once that budget ended the tool-using turns."""

    def next_turn(self) -> bool:
        """Whether another tool-using turn may start (and counts it); False once a budget
        stopped the run."""
        if self.stopped_by is not None:
            return False
        if self.max_turns is not None and self.turns >= self.max_turns:
            self.stopped_by = "max_turns"
            return False
        self.turns += 1
        return True

    def take_tool_call(self) -> bool:
        """Whether one more tool call may run (and counts it); a refusal stops the turns."""
        if self.max_tool_calls is not None and self.tool_calls >= self.max_tool_calls:
            self.refused += 1
            self.stopped_by = "max_tool_calls"
            return False
        self.tool_calls += 1
        return True

    def refusal(self) -> str:
        """The tool result of a refused call."""
        return (
            f"Error: not run: the tool-call budget of this run (max_tool_calls="
            f"{self.max_tool_calls}) is spent. Give your final answer."
        )

    def forced_answer_prompt(self) -> str:
        limit = self.stopped_by or "max_turns"
        value = self.max_turns if limit == "max_turns" else self.max_tool_calls
        return FORCED_ANSWER.format(limit=f"{limit}={value}")

    def record(self) -> dict[str, Any]:
        """What the result reports: the budgets, what was used, why the turns stopped."""
        return {
            "max_turns": self.max_turns,
            "max_tool_calls": self.max_tool_calls,
            "stopped_by": self.stopped_by,
            "refused_tool_calls": self.refused,
        }
