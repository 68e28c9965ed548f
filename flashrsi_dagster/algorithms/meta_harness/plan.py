"""What comes next, as a pure function of the records so far: the CLI loop, the Dagster
sensor and every step's own order check call `next_step`, so they can never disagree."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from flashrsi_dagster.algorithms.base import ONLY_SLOT, Step
from flashrsi_dagster.algorithms.meta_harness.records import (
    Layout,
    Promotion,
    RoundRecord,
    TestResult,
)
from flashrsi_dagster.evaluator.compare import basis
from flashrsi_dagster.records import read_optional

SLOT = ONLY_SLOT
"""The seed round's first slot (the target's own harness), and every later round's first."""
SEEDS = (SLOT,)
"""The seed round's slots by default: one initial harness (`algorithm.initial_harnesses`
adds c1, c2, …)."""


def slots_of(candidates: int) -> tuple[str, ...]:
    """The candidate slots of a round after the seed's: c0, c1, …"""
    return tuple(f"c{i}" for i in range(candidates))


def candidate_name(k: int, slot: str = SLOT) -> str:
    """`round 3` (slot c0, as before there were slots), `round 3 c1`: how lines name one."""
    return f"round {k}" if slot == SLOT else f"round {k} {slot}"


def slot_number(slot: str) -> int:
    """c3 -> 3: slots order by number (c10 after c9), the order ties are broken in."""
    return int(slot.removeprefix("c"))


@dataclass(frozen=True)
class State:
    rounds: tuple[RoundRecord, ...]
    """One record per candidate that has a result (round x slot), by round then slot."""
    promotion: Promotion | None
    test: TestResult | None
    frontier_tests: tuple[TestResult, ...] = ()
    """The sealed tests of the promotion's other frontier members made so far
    (`algorithm.sealed_test_frontier`), in the promotion's frontier order."""

    def untested_frontier(self) -> list[tuple[int, str, str]]:
        """The promotion's frontier members (round, slot, snapshot id) still owed their one
        sealed test after the promoted snapshot's: none before that test, the promoted
        snapshot never (its test is `test`)."""
        if self.promotion is None or self.test is None:
            return []
        tested = {t.snapshot_id for t in self.frontier_tests} | {self.test.snapshot_id}
        return [m for m in self.promotion.frontier if m[2] not in tested]

    def round(self, k: int, slot: str = SLOT) -> RoundRecord | None:
        """Round k's candidate in `slot` (the seed round has c0, and c1… for each of
        `initial_harnesses`)."""
        return next((r for r in self.rounds if r.round == k and r.slot == slot), None)

    def candidate_of(self, snapshot_id: str) -> RoundRecord | None:
        """The candidate that made (or, for the seed, evaluated) a snapshot: every candidate
        commits a snapshot of its own, so the id names it."""
        return next((r for r in self.rounds if r.snapshot_id == snapshot_id), None)

    def parent_round(self, k: int, slot: str = SLOT) -> RoundRecord | None:
        """The evaluated round whose snapshot round k's candidate was made from."""
        this = self.round(k, slot)
        if this is None or this.parent_id is None:
            return None
        return self.candidate_of(this.parent_id)


def read_state(
    layout: Layout, max_steps: int, slots: tuple[str, ...] = (SLOT,), seeds: tuple[str, ...] = SEEDS
) -> State:
    """The records so far (the one side effect of planning: reading them)."""
    rounds = [
        read_optional(layout.round(k, slot), RoundRecord)
        for k, slot in grid(max_steps, slots, seeds)
    ]
    promotion = read_optional(layout.promotion, Promotion)
    members = promotion.frontier if promotion is not None else []
    tests = [read_optional(layout.frontier_test(k, slot), TestResult) for k, slot, _ in members]
    return State(
        rounds=tuple(r for r in rounds if r is not None),
        promotion=promotion,
        test=read_optional(layout.test, TestResult),
        frontier_tests=tuple(t for t in tests if t is not None),
    )


def grid(
    max_steps: int, slots: tuple[str, ...], seeds: tuple[str, ...] = SEEDS
) -> list[tuple[int, str]]:
    """Every candidate of the search, in order: the initial harnesses (round 0), then each
    round's slots."""
    return [(0, s) for s in seeds] + [(k, slot) for k in range(1, max_steps + 1) for slot in slots]


def next_step(
    state: State,
    max_steps: int,
    slots: tuple[str, ...] = (SLOT,),
    seeds: tuple[str, ...] = SEEDS,
    *,
    frontier: bool = False,
) -> Step:
    """`frontier`: the promotion's other frontier members are sealed-tested too
    (`algorithm.sealed_test_frontier`), within the `sealed_test` step."""
    done = {(r.round, r.slot) for r in state.rounds}
    if any(r.aborts for r in state.rounds):
        return Step("aborted")
    for k, slot in grid(max_steps, slots, seeds):
        if (k, slot) not in done:
            return Step("evaluate_seed" if k == 0 else "propose", k, slot)
    if state.test is None and (state.promotion is None or stale(state)):
        # again whenever a round's score changed before the test
        return Step("promote", basis=promotion_basis(state))
    if state.test is None or (frontier and state.untested_frontier()):
        return Step("sealed_test")
    return Step("done")


def ready_steps(
    state: State,
    max_steps: int,
    slots: tuple[str, ...] = (SLOT,),
    seeds: tuple[str, ...] = SEEDS,
    *,
    frontier: bool = False,
) -> tuple[Step, ...]:
    """The next step and, when it is a candidate, every other candidate of its round that has
    no result yet: all of them propose from the same history (the rounds before), so they may
    run side by side, in any order."""
    step = next_step(state, max_steps, slots, seeds, frontier=frontier)
    if step.action != "propose":
        return (step,)
    k = step.round
    return tuple(Step("propose", k, slot) for slot in slots if state.round(k, slot) is None)  # type: ignore[arg-type]


def unfinished_rounds(
    state: State, rounds: range, slots: tuple[str, ...], seeds: tuple[str, ...] = SEEDS
) -> list[int]:
    """The rounds among `rounds` with a candidate that has no result yet."""
    return [
        k
        for k in rounds
        if any(state.round(k, slot) is None for slot in (seeds if k == 0 else slots))
    ]


def stale(state: State) -> bool:
    """Whether the promotion no longer matches the rounds' ranking (a round re-evaluated)."""
    if state.promotion is None:
        return False
    return [list(r) for r in rank(state.rounds)] != [list(r) for r in state.promotion.ranking]


def still_missing(
    state: State,
    max_steps: int,
    action: str,
    slots: tuple[str, ...] = (SLOT,),
    seeds: tuple[str, ...] = SEEDS,
) -> str | None:
    """Why `action` cannot run yet, or None when it is the search's turn (or already done,
    which the step itself reads back)."""
    step = next_step(state, max_steps, slots, seeds)
    # A promotion on record is read back (frozen after the test), never re-ranked while a
    # round has no result (one set aside for re-evaluation, say): that ranking would miss it.
    settled = state.promotion is not None and (state.test is not None or step.round is None)
    if action == "promote" and (settled or step.action == "promote"):
        return None
    if action == "sealed_test" and (state.test is not None or step.action == "sealed_test"):
        return None
    if step.action == "aborted":
        return "the search was aborted (a Worker failed); nothing is promoted or tested"
    missing = unfinished_rounds(state, range(max_steps + 1), slots, seeds)
    if missing:
        rounds = ", ".join(str(k) for k in missing)
        return f"the search is not finished: round(s) {rounds} of 0..{max_steps} have no result yet"
    return "the promotion is missing or stale: promote first (it re-ranks the rounds)"


def promotion_basis(state: State) -> str:
    """What a promotion step acts on: the ranking now, and the promotion it replaces. A
    ranking that comes back (a round re-evaluated twice) replaces another promotion, so each
    re-ranking is a step of its own (hosts launch a step once per basis)."""
    basis = ranking_digest(state.rounds)
    if state.promotion is not None:
        replaced = f"{state.promotion.created.isoformat()}{state.promotion.ranking}"
        basis += "-" + hashlib.sha256(replaced.encode()).hexdigest()[:10]
    return basis


def ranking_digest(rounds: tuple[RoundRecord, ...]) -> str:
    """A short name for the ranking the rounds give (for telling promotions apart)."""
    return hashlib.sha256(json.dumps(rank(rounds)).encode()).hexdigest()[:10]


def start_of(state: State) -> str:
    """The snapshot each candidate is written in: the best initial harness on dev (round 0;
    a tie keeps the lower slot, so the target's own harness, c0, is the default's)."""
    ranked = rank([r for r in state.rounds if r.round == 0])
    if ranked:
        return ranked[0][1]
    return state.round(0).snapshot_id  # type: ignore[union-attr,return-value]


def improver_of(state: State, k: int) -> str | None:
    """Under `worker.harness: adopted`, the snapshot whose harness makes round k's
    candidates: the best-ranked of the rounds before k, the one a promotion then would pick
    (every candidate of round k gets the same, as it gets the same history). A harness that
    failed the editing check, whose run as the Worker failed, or that gave no candidate, is
    passed over, so one that breaks its own editing gains no turn; with none left, the Worker
    role's own harness (None)."""
    earlier = [r for r in state.rounds if r.round < k]
    failed = {r.produced_by for r in earlier if r.improver_failed or r.improver_gave_nothing}
    failed |= {r.snapshot_id for r in earlier if r.can_edit is False}
    return next((sid for _, sid, _ in rank(earlier) if sid not in failed), None)


def rank(rounds: tuple[RoundRecord, ...] | list[RoundRecord]) -> list[tuple[int, str, float]]:
    """Evaluated snapshots by dev score, best first; a tie keeps the earlier round first, then
    the lower slot.
    Only rounds on the seed round's evaluation set are ranked: a score on another version of
    dev is no lift over the seed (`evaluator.compare`)."""
    scored = [r for r in rounds if r.status == "evaluated" and r.dev_score is not None]
    scored.sort(key=lambda r: (r.round, slot_number(r.slot)))
    base = scored[0].eval_set if scored else None
    scored = [r for r in scored if basis(r.eval_set, base).comparable]
    ordered = sorted(scored, key=lambda r: (-r.dev_score, r.round, slot_number(r.slot)))  # type: ignore[operator]
    return [(r.round, r.snapshot_id or "", r.dev_score or 0.0) for r in ordered]
