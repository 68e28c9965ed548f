"""What comes next in the Evolver, as a pure function of its records (the journal replayed).

    cold start (round 0, slot `vanilla`)
    round r = 1, 2, …:  diagnose (slot `diagnose`: Gate0, re-diagnosis, the WHYs, the anchors)
                        -> each planned candidate (slots `w<i>c<j>`: design, guards, apply,
                           screen, confirm, gates -> its node), side by side: each starts
                           from the round's plan and earlier rounds, never from a sibling
                        -> decide (slot `decide`: pick the parent, the round's outcome)
    until termination (patience against the fixed vanilla, the round cap, errored rounds in a
    row) -> the unsealed test and the retention report (the finalize job's `sealed_test`)

Termination reads the rounds' outcomes only; it never looks at test.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.evolver.choose import Budget
from flashrsi_dagster.algorithms.evolver.nodes import Node
from flashrsi_dagster.algorithms.evolver.records import (
    ColdStart,
    Layout,
    RoundDecision,
    RoundPlan,
    node_id,
)
from flashrsi_dagster.algorithms.evolver.termination import StopReason, Termination
from flashrsi_dagster.records import read_optional

VANILLA, DIAGNOSE, DECIDE = "vanilla", "diagnose", "decide"


@dataclass(frozen=True)
class Shape:
    """What the config fixes: the candidate slots and when to stop."""

    budget: Budget
    termination: Termination
    recombinations: int = 0

    def slots(self) -> tuple[str, ...]:
        return (VANILLA, DIAGNOSE, *self.candidate_slots(), DECIDE)

    def candidate_slots(self) -> tuple[str, ...]:
        """WHY x candidate (`w<i>c<j>`), then the recombinations (`x<n>`)."""
        return (*self.budget.slots(), *recombination_slots(self.recombinations))

    @property
    def rounds(self) -> int:
        return self.termination.max_rounds + 1  # round 0 is the cold start

    def step_at(self, r: int, slot: str) -> Step | None:
        """The step a (round, slot) names, or None when none does (`vanilla` past round 0,
        any other slot at round 0): the hosts' partitions are the grid of both."""
        if r == 0:
            return Step("cold_start", 0, VANILLA) if slot == VANILLA else None
        if slot in (DIAGNOSE, DECIDE):
            return Step(slot, r, slot)
        return Step("candidate", r, slot) if slot in self.candidate_slots() else None


def recombination_slots(n: int) -> tuple[str, ...]:
    return tuple(f"x{i}" for i in range(1, n + 1))


@dataclass(frozen=True)
class Round:
    plan: RoundPlan | None
    nodes: dict[str, Node]
    decision: RoundDecision | None


@dataclass(frozen=True)
class State:
    cold_start: ColdStart | None
    rounds: tuple[Round, ...]
    """Rounds 1, 2, … that have at least a plan."""
    retention: bool
    restored: str | None = None
    """The baseline a roll-back restored, while no round has promoted since
    (`decisions.baseline.restored`): the parent from then on."""
    set_aside: frozenset[str] = frozenset()
    """Snapshots a roll-back replaced (`decisions.baseline.set_aside`): never promoted again
    by a round."""

    def round(self, r: int) -> Round | None:
        return self.rounds[r - 1] if 1 <= r <= len(self.rounds) else None

    def outcomes(self):
        return [rd.decision.outcome for rd in self.rounds if rd.decision is not None]

    def at_start_of(self, r: int) -> State:
        """The state a candidate of round `r` starts from: earlier rounds, and round `r`'s
        plan without any node, so that candidates run side by side or one after another
        see the same thing."""
        current = self.round(r)
        assert current is not None and current.plan is not None
        rounds = (*self.rounds[: r - 1], Round(current.plan, {}, None))
        return replace(self, rounds=rounds, retention=False)

    def parent(self) -> str | None:
        """The current parent: the baseline a roll-back restored, else the last decided
        round's, else vanilla."""
        if self.restored is not None:
            return self.restored
        decided = [rd.decision for rd in self.rounds if rd.decision is not None]
        if decided:
            return decided[-1].parent_after
        return self.cold_start.vanilla_id if self.cold_start else None


def read_state(layout: Layout, shape: Shape) -> State:
    rounds = []
    for r in range(1, shape.rounds):
        plan = read_optional(layout.plan(r), RoundPlan)
        if plan is None:
            break
        nodes = {
            slot: node
            for slot in plan.slots
            if (node := read_optional(layout.node(node_id(r, slot)), Node)) is not None
        }
        rounds.append(Round(plan, nodes, read_optional(layout.decision(r), RoundDecision)))
    return State(
        cold_start=read_optional(layout.cold_start, ColdStart),
        rounds=tuple(rounds),
        retention=layout.retention.exists(),
    )


def stopped(state: State, shape: Shape) -> StopReason | None:
    return shape.termination.stop(state.outcomes())


def next_step(state: State, shape: Shape) -> Step:
    return ready_steps(state, shape)[0]


def ready_steps(state: State, shape: Shape) -> tuple[Step, ...]:
    """Every step that may run now: the round's candidates without a node, in slot order, all
    at once (none reads a sibling's records); otherwise the one next step."""
    if state.cold_start is None:
        return (Step("cold_start", 0, VANILLA),)
    last = state.rounds[-1] if state.rounds else None
    if last is not None and last.decision is None:
        assert last.plan is not None
        r = last.plan.round
        missing = [s for s in last.plan.slots if s not in last.nodes]
        return tuple(Step("candidate", r, s) for s in missing) or (Step("decide", r, DECIDE),)
    if stopped(state, shape) is None:
        return (Step("diagnose", len(state.rounds) + 1, DIAGNOSE),)
    if not state.retention:
        return (Step("sealed_test"),)
    return (Step("done"),)
