"""What comes next, as a pure function of the records so far: the CLI loop and the Dagster
sensor both call `next_step`, so they can never disagree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from flashrsi_dagster.algorithms.meta_harness.records import (
    Layout,
    Promotion,
    RoundRecord,
    TestResult,
    read_optional,
)

Action = Literal["evaluate_seed", "propose", "promote", "sealed_test", "done", "aborted"]


@dataclass(frozen=True)
class Step:
    action: Action
    round: int | None = None


@dataclass(frozen=True)
class State:
    rounds: tuple[RoundRecord, ...]
    promotion: Promotion | None
    test: TestResult | None


def read_state(layout: Layout, max_steps: int) -> State:
    """The records so far (the one side effect of planning: reading them)."""
    rounds = [read_optional(layout.round(k), RoundRecord) for k in range(max_steps + 1)]
    return State(
        rounds=tuple(r for r in rounds if r is not None),
        promotion=read_optional(layout.promotion, Promotion),
        test=read_optional(layout.test, TestResult),
    )


def next_step(state: State, max_steps: int) -> Step:
    done = {r.round: r for r in state.rounds}
    if any(r.status == "worker_failed" for r in state.rounds):
        return Step("aborted")
    if 0 not in done:
        return Step("evaluate_seed", 0)
    for k in range(1, max_steps + 1):
        if k not in done:
            return Step("propose", k)
    if state.promotion is None:
        return Step("promote")
    if state.test is None:
        return Step("sealed_test")
    return Step("done")


def rank(rounds: tuple[RoundRecord, ...] | list[RoundRecord]) -> list[tuple[int, str, float]]:
    """Evaluated snapshots by dev score, best first; a tie keeps the earlier round first."""
    scored = [r for r in rounds if r.status == "evaluated" and r.dev_score is not None]
    ordered = sorted(scored, key=lambda r: (-r.dev_score, r.round))  # type: ignore[operator]
    return [(r.round, r.snapshot_id or "", r.dev_score or 0.0) for r in ordered]
