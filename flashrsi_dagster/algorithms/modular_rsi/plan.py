"""What comes next in ModularRSI, as a pure function of its records.

The module branches run side by side (they share nothing: each starts from the seed and reads
only its own records), each through every step of its schedule (epoch x batch) in order;
then, when some branch changed the seed, the integration: the merge (round 0), and a
repair round while the last one asks for more, up to `integration_rounds`; then the
promotion and the sealed test. A Worker failure or a protocol error aborts the experiment.
"""

from __future__ import annotations

from dataclasses import dataclass

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.modular_rsi.modules import INTEGRATION
from flashrsi_dagster.algorithms.modular_rsi.records import (
    Layout,
    Promotion,
    StepRecord,
    TestResult,
)
from flashrsi_dagster.records import read_optional


@dataclass(frozen=True)
class Plan:
    """The shape of the search: what the config and the schedule fix."""

    modules: tuple[str, ...]
    branch_steps: int
    integration_rounds: int

    @property
    def rounds(self) -> int:
        return max(self.branch_steps, self.integration_rounds + 1)


@dataclass(frozen=True)
class State:
    steps: dict[tuple[str, int], StepRecord]
    promotion: Promotion | None
    test: TestResult | None

    def step(self, slot: str, k: int) -> StepRecord | None:
        return self.steps.get((slot, k))

    def branch(self, slot: str) -> list[StepRecord]:
        return sorted((r for (s, _), r in self.steps.items() if s == slot), key=lambda r: r.round)

    def current(self, slot: str, before: int, start: str) -> str:
        """The slot's version entering step `before`: the last earlier step's outcome."""
        done = [r for r in self.branch(slot) if r.round < before]
        return done[-1].current_id if done else start

    def changed(self, module: str) -> bool:
        return any(r.status == "accepted" for r in self.branch(module))

    def failed_improvers(self) -> set[str]:
        """Adopted harnesses that failed as the Worker (`worker.harness: adopted`)."""
        return {r.produced_by for r in self.steps.values() if r.improver_failed}  # type: ignore[misc]

    @property
    def aborted(self) -> StepRecord | None:
        return next((r for r in self.steps.values() if r.status == "aborted"), None)


def read_state(layout: Layout, plan: Plan) -> State:
    slots = [*((m, plan.branch_steps) for m in plan.modules)]
    slots.append((INTEGRATION, plan.integration_rounds + 1))
    steps = {}
    for slot, count in slots:
        for k in range(count):
            record = read_optional(layout.step(slot, k), StepRecord)
            if record is not None:
                steps[(slot, k)] = record
    return State(
        steps=steps,
        promotion=read_optional(layout.promotion, Promotion),
        test=read_optional(layout.test, TestResult),
    )


def next_step(state: State, plan: Plan) -> Step:
    if state.aborted is not None:
        return Step("aborted")
    for module in plan.modules:
        for k in range(plan.branch_steps):
            if state.step(module, k) is None:
                return Step("branch", k, module)
    if any(state.changed(m) for m in plan.modules):
        for r in range(plan.integration_rounds + 1):
            record = state.step(INTEGRATION, r)
            if record is None:
                return Step("integrate", r, INTEGRATION)
            if not record.more:
                break
    if state.promotion is None:
        return Step("promote")
    if state.test is None:
        return Step("sealed_test")
    return Step("done")


def ready_steps(state: State, plan: Plan) -> tuple[Step, ...]:
    """Every step that may run now: each unfinished branch's next step, all at once (the
    first is `next_step`'s); past the branches, the one next step."""
    if state.aborted is None:
        branches = tuple(
            Step("branch", k, module)
            for module in plan.modules
            if (k := _next_of(state, module, plan)) is not None
        )
        if branches:
            return branches
    return (next_step(state, plan),)


def _next_of(state: State, module: str, plan: Plan) -> int | None:
    return next((k for k in range(plan.branch_steps) if state.step(module, k) is None), None)


def still_missing(state: State, plan: Plan, action: str) -> str | None:
    """Why `action` (`promote`, `sealed_test`) cannot run now, or None when it may (or has
    run, which the step reads back)."""
    step = next_step(state, plan)
    if action == "promote" and (state.promotion is not None or step.action == "promote"):
        return None
    if action == "sealed_test" and (state.test is not None or step.action == "sealed_test"):
        return None
    if step.action == "aborted":
        return f"the experiment was aborted: {state.aborted.reason if state.aborted else ''}"
    if step.round is not None:
        return f"the search is not finished: {step.describe()} comes first"
    return "promote first"


def integration_phase(state: State, r: int) -> str:
    """`merge` until a merge was accepted, `repair` after."""
    accepted = any(rec.status == "accepted" for rec in state.branch(INTEGRATION) if rec.round < r)
    return "repair" if accepted else "merge"
