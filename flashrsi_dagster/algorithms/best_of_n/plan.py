"""What comes next, as a pure function of the records and the config: the CLI, the Dagster
hosts and every step's own order check call `next_step`, so they never disagree.

Round 0 is the seed. Sample i (0-based) is round 1 + i // width, slot c<i % width>, where
`width` is `side_by_side`; a round's slots run side by side. A round starts only while the
budget is not spent (a started round finishes its slots, so a round of several samples can
overshoot by what they spend: the summary shows it), and never beyond N samples.
"""

from __future__ import annotations

from dataclasses import dataclass

from flashrsi_dagster.algorithms.base import ONLY_SLOT, Step
from flashrsi_dagster.algorithms.best_of_n.records import (
    BudgetRecord,
    Layout,
    Promotion,
    SampleRecord,
    TestResult,
)
from flashrsi_dagster.controls.spend import Spend
from flashrsi_dagster.evaluator.compare import basis
from flashrsi_dagster.records import read_optional

SLOT = ONLY_SLOT


def slots_of(width: int) -> tuple[str, ...]:
    return tuple(f"c{i}" for i in range(width))


def slot_number(slot: str) -> int:
    return int(slot.removeprefix("c"))


def sample_of(k: int, slot: str, width: int) -> int:
    """The 0-based sample index of round k (≥ 1), `slot`."""
    return (k - 1) * width + slot_number(slot)


def rounds_after_seed(cap: int, width: int) -> int:
    return -(-cap // width)


def grid(cap: int, width: int) -> list[tuple[int, str]]:
    """Every sample's (round, slot), in sample order."""
    return [(1 + i // width, f"c{i % width}") for i in range(cap)]


def candidate_name(k: int, slot: str = SLOT, width: int = 1) -> str:
    return "seed" if k == 0 else f"sample {sample_of(k, slot, width)}"


@dataclass(frozen=True)
class State:
    rounds: tuple[SampleRecord, ...]
    """The seed and every sample with a result, in sample order."""
    budget: BudgetRecord | None
    promotion: Promotion | None
    test: TestResult | None

    def round(self, k: int, slot: str = SLOT) -> SampleRecord | None:
        return next((r for r in self.rounds if r.round == k and r.slot == slot), None)

    def candidate_of(self, snapshot_id: str) -> SampleRecord | None:
        return next((r for r in self.rounds if r.snapshot_id == snapshot_id), None)

    def parent_round(self, k: int, slot: str = SLOT) -> SampleRecord | None:
        """Every sample's parent is the seed."""
        return None if k == 0 else self.round(0)

    @property
    def samples(self) -> tuple[SampleRecord, ...]:
        return tuple(r for r in self.rounds if r.round > 0)

    @property
    def spent(self) -> Spend:
        return sum((r.spend for r in self.samples), Spend())


def read_state(layout: Layout, cap: int, width: int) -> State:
    candidates = [(0, SLOT), *grid(cap, width)]
    found = [read_optional(layout.round(k, s), SampleRecord) for k, s in candidates]
    return State(
        rounds=tuple(r for r in found if r is not None),
        budget=read_optional(layout.budget, BudgetRecord),
        promotion=read_optional(layout.promotion, Promotion),
        test=read_optional(layout.test, TestResult),
    )


def spent_out(budget: BudgetRecord | None, spent: Spend) -> str | None:
    """Why no new round may start (the budget is spent), or None."""
    if budget is None:
        return None
    for name, cap, used in (
        ("model calls", budget.model_calls, spent.model_calls),
        ("tokens", budget.tokens, spent.tokens),
    ):
        if cap is not None and used >= cap:
            return f"the budget is spent: {used} of {cap} Worker {name}"
    return None


def next_step(state: State, cap: int, width: int) -> Step:
    if state.round(0) is None:
        return Step("evaluate_seed", 0, SLOT)
    missing = _next_round(state, cap, width)
    if missing:
        return Step("sample", missing[0][0], missing[0][1])
    if state.promotion is None:
        return Step("promote")
    if state.test is None:
        return Step("sealed_test")
    return Step("done")


def _next_round(state: State, cap: int, width: int) -> list[tuple[int, str]]:
    """The first round with a sample lacking its result, if it may run: one already started
    always may, a new one only while the budget is not spent."""
    for k in range(1, rounds_after_seed(cap, width) + 1):
        slots = [(r, s) for r, s in grid(cap, width) if r == k]
        missing = [(r, s) for r, s in slots if state.round(r, s) is None]
        if not missing:
            continue
        started = len(missing) < len(slots)
        if not started and spent_out(state.budget, state.spent):
            return []
        return missing
    return []


def ready_steps(state: State, cap: int, width: int) -> tuple[Step, ...]:
    """The next step; with a sample, every other sample of its round that has no result:
    none sees another's edit, so they run side by side, in any order."""
    step = next_step(state, cap, width)
    if step.action != "sample":
        return (step,)
    return tuple(Step("sample", k, slot) for k, slot in _next_round(state, cap, width))


def stopped(state: State, cap: int, width: int) -> str:
    """Why sampling ended (once it has): the budget, or N samples."""
    return spent_out(state.budget, state.spent) or f"all {cap} samples were taken"


def still_missing(state: State, cap: int, width: int, action: str) -> str | None:
    """Why `action` may not run now; None when it may (or it is done, and read back)."""
    step = next_step(state, cap, width)
    order = ["evaluate_seed", "sample", "promote", "sealed_test", "done"]
    if order.index(step.action) >= order.index(action):
        return None
    return f"{step.describe()} comes first"


def rank(rounds: tuple[SampleRecord, ...]) -> list[tuple[int, str, float]]:
    """Evaluated candidates by dev score, best first; a tie keeps fewer changed lines (the
    seed has none), then the earlier sample. Only scores on the seed's evaluation set count."""
    scored = [r for r in rounds if r.status == "evaluated" and r.dev_score is not None]
    base = next((r.eval_set for r in scored if r.round == 0), None)
    scored = [r for r in scored if basis(r.eval_set, base).comparable]
    order = sorted(
        scored,
        key=lambda r: (-(r.dev_score or 0.0), r.changed_lines, r.round, slot_number(r.slot)),
    )
    return [(r.round, r.snapshot_id or "", r.dev_score or 0.0) for r in order]
