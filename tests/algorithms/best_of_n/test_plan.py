"""Best-of-N's plan as pure functions: the seed first, samples round by round (a round's slots
side by side), a new round only while budget is left, at most N samples; the best dev score
promoted, ties to fewer changes, then the earlier sample."""

from __future__ import annotations

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.best_of_n.plan import (
    State,
    grid,
    next_step,
    rank,
    ready_steps,
    sample_of,
    spent_out,
    still_missing,
    stopped,
)
from flashrsi_dagster.algorithms.best_of_n.records import BudgetRecord, SampleRecord
from flashrsi_dagster.controls.spend import Spend


def _seed(score: float = 0.5) -> SampleRecord:
    return SampleRecord(round=0, status="evaluated", snapshot_id="seed", dev_score=score)


def _sample(k: int, slot: str = "c0", score: float | None = 0.5, *, calls=5, lines=1, sid=None):
    return SampleRecord(
        round=k,
        slot=slot,
        status="evaluated" if score is not None else "rejected",
        snapshot_id=sid or (f"s{k}{slot}" if score is not None else None),
        dev_score=score,
        changed_lines=lines,
        spend=Spend(model_calls=calls, tokens=100 * calls),
    )


def _budget(calls: int | None = None, tokens: int | None = None, n: int = 4) -> BudgetRecord:
    return BudgetRecord(model_calls=calls, tokens=tokens, samples=n)


def _state(*rounds, budget=None, promotion=None, test=None) -> State:
    return State(rounds=tuple(rounds), budget=budget or _budget(), promotion=promotion, test=test)


def test_samples_are_numbered_across_rounds_of_side_by_side_slots():
    assert grid(5, 2) == [(1, "c0"), (1, "c1"), (2, "c0"), (2, "c1"), (3, "c0")]
    assert [sample_of(k, s, 2) for k, s in grid(5, 2)] == [0, 1, 2, 3, 4]


def test_the_seed_comes_first_then_a_round_of_samples_side_by_side():
    empty = State(rounds=(), budget=None, promotion=None, test=None)
    assert next_step(empty, 4, 2) == Step("evaluate_seed", 0, "c0")

    seeded = _state(_seed())

    assert next_step(seeded, 4, 2) == Step("sample", 1, "c0")
    assert ready_steps(seeded, 4, 2) == (Step("sample", 1, "c0"), Step("sample", 1, "c1"))


def test_after_n_samples_it_promotes_then_tests_once_then_is_done():
    sampled = _state(_seed(), _sample(1), _sample(2), _sample(3))

    assert next_step(sampled, 3, 1) == Step("promote")
    assert still_missing(sampled, 3, 1, "sealed_test") == "promote comes first"
    assert stopped(sampled, 3, 1) == "all 3 samples were taken"


def test_a_new_round_starts_only_while_the_budget_is_not_spent():
    budget = _budget(calls=10)
    under = _state(_seed(), _sample(1, calls=5), budget=budget)
    spent = _state(_seed(), _sample(1, calls=5), _sample(2, calls=5), budget=budget)

    assert next_step(under, 8, 1) == Step("sample", 2, "c0")
    assert next_step(spent, 8, 1) == Step("promote")
    assert spent_out(budget, spent.spent) == "the budget is spent: 10 of 10 Worker model calls"


def test_a_started_round_finishes_its_slots_even_past_the_budget():
    budget = _budget(tokens=300)
    half = _state(_seed(), _sample(1, "c0", calls=5), budget=budget)  # 500 tokens > 300

    assert ready_steps(half, 4, 2) == (Step("sample", 1, "c1"),)


def test_a_zero_budget_samples_nothing_and_promotes_the_seed():
    nothing = _state(_seed(), budget=_budget(calls=0))

    assert next_step(nothing, 4, 1) == Step("promote")
    assert rank(nothing.rounds)[0][1] == "seed"


def test_ties_keep_fewer_changed_lines_then_the_earlier_sample():
    seed = _seed(0.5)
    long_edit = _sample(1, score=0.75, lines=9)
    short_edit = _sample(2, score=0.75, lines=2)
    later_short = _sample(3, score=0.75, lines=2)

    ranking = rank((seed, long_edit, short_edit, later_short))

    assert [r[1] for r in ranking] == ["s2c0", "s3c0", "s1c0", "seed"]
    assert rank((_seed(0.75), _sample(1, score=0.75, lines=1)))[0][1] == "seed"


def test_rejected_samples_are_not_ranked():
    assert [r[1] for r in rank((_seed(0.25), _sample(1, score=None)))] == ["seed"]
