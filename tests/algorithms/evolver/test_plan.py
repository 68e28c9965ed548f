"""The Evolver's "what next", replayed from its records: cold start, then per round the
diagnosis, each planned candidate and the decision, until termination, then the unsealed
test. A record written is a step done; one missing is the step to do (after a crash too)."""

from __future__ import annotations

from pathlib import Path

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.evolver.choose import Budget
from flashrsi_dagster.algorithms.evolver.nodes import Node
from flashrsi_dagster.algorithms.evolver.plan import Shape, next_step, read_state, ready_steps
from flashrsi_dagster.algorithms.evolver.records import (
    ColdStart,
    Layout,
    RetentionReport,
    RoundDecision,
    RoundPlan,
    node_id,
)
from flashrsi_dagster.algorithms.evolver.termination import Termination
from flashrsi_dagster.records import RecordStore, Redactor

SHAPE = Shape(Budget(1, 2), Termination(patience=2, max_rounds=5, max_consecutive_errors=2))


COLD = ColdStart(
    vanilla_id="v", k=3, rates={}, mean=0.4, taxonomy="b", eval_set="train/e1", failing=0
)


def _world(tmp_path: Path):
    store = RecordStore(tmp_path, Redactor())
    layout = Layout.of(tmp_path / "records")
    return store, layout, lambda: next_step(read_state(layout, SHAPE), SHAPE)


def _round(store, layout, r: int, outcome: str, parent: str = "v") -> None:
    plan = RoundPlan(
        round=r,
        parent_id=parent,
        whys=["missing_cue"],
        source="model",
        shadow=[],
        slots=["w1c1", "w1c2"],
        anchor={"missing_cue": ["t1"]},
    )
    store.write(layout.plan(r), plan)
    for slot in plan.slots:
        node = Node(
            id=node_id(r, slot),
            round=r,
            slot=slot,
            why="missing_cue",
            parent_id=parent,
            state="pruned_at_screen",
            reason="culled",
        )
        store.write(layout.node(node.id), node)
    decision = RoundDecision(
        round=r, outcome=outcome, parent_before=parent, parent_after=parent, reason="r"
    )
    store.write(layout.decision(r), decision)


def test_the_steps_follow_the_records_from_the_cold_start_to_the_unsealed_test(tmp_path):
    store, layout, what_next = _world(tmp_path)
    assert SHAPE.slots() == ("vanilla", "diagnose", "w1c1", "w1c2", "decide")
    assert what_next() == Step("cold_start", 0, "vanilla")
    store.write(layout.cold_start, COLD)
    assert what_next() == Step("diagnose", 1, "diagnose")

    plan = RoundPlan(
        round=1,
        parent_id="v",
        whys=["missing_cue"],
        source="formula",
        shadow=[],
        slots=["w1c1", "w1c2"],
        anchor={},
    )
    store.write(layout.plan(1), plan)
    assert what_next() == Step("candidate", 1, "w1c1")
    node = Node(
        id="r001.w1c1",
        round=1,
        slot="w1c1",
        why="missing_cue",
        parent_id="v",
        state="errored",
        reason="the design failed",
    )
    store.write(layout.node(node.id), node)
    assert what_next() == Step("candidate", 1, "w1c2")  # a crash here resumes at w1c2
    store.write(
        layout.node("r001.w1c2"), node.model_copy(update={"id": "r001.w1c2", "slot": "w1c2"})
    )
    assert what_next() == Step("decide", 1, "decide")
    store.write(
        layout.decision(1),
        RoundDecision(round=1, outcome="no_gain", parent_before="v", parent_after="v", reason="r"),
    )
    assert what_next() == Step("diagnose", 2, "diagnose")
    _round(store, layout, 2, "errored")  # an errored round uses no patience
    assert what_next() == Step("diagnose", 3, "diagnose")
    _round(store, layout, 3, "no_gain")  # the second idle round: patience 2 is spent
    assert what_next() == Step("sealed_test")
    store.write(layout.retention, RetentionReport(rows=[], eval_set="test/e1", k=3))
    assert what_next() == Step("done")


def test_the_round_cap_stops_even_when_every_round_wins(tmp_path):
    store, layout, what_next = _world(tmp_path)
    store.write(layout.cold_start, COLD)
    for r in range(1, 6):
        _round(store, layout, r, "beat_vanilla")
    state = read_state(layout, SHAPE)
    assert len(state.rounds) == 5 and what_next() == Step("sealed_test")


def test_each_partition_of_the_grid_names_one_step_or_none():
    assert SHAPE.slots() == ("vanilla", "diagnose", "w1c1", "w1c2", "decide")
    assert SHAPE.step_at(0, "vanilla") == Step("cold_start", 0, "vanilla")
    assert SHAPE.step_at(2, "diagnose") == Step("diagnose", 2, "diagnose")
    assert SHAPE.step_at(2, "w1c2") == Step("candidate", 2, "w1c2")
    assert SHAPE.step_at(2, "decide") == Step("decide", 2, "decide")
    # the cold start is round 0 alone; a slot beyond the budget is no candidate
    assert SHAPE.step_at(0, "diagnose") is None and SHAPE.step_at(2, "vanilla") is None
    assert SHAPE.step_at(2, "w2c1") is None


def test_a_rounds_candidates_are_all_ready_at_once_and_the_decision_waits_for_them(tmp_path):
    store, layout, _ = _world(tmp_path)
    ready = lambda: ready_steps(read_state(layout, SHAPE), SHAPE)  # noqa: E731
    assert ready() == (Step("cold_start", 0, "vanilla"),)  # one at a time outside a round
    store.write(layout.cold_start, COLD)
    assert ready() == (Step("diagnose", 1, "diagnose"),)
    _round(store, layout, 1, "no_gain")
    for undone in (layout.decision(1), layout.node("r001.w1c1"), layout.node("r001.w1c2")):
        store.remove(undone)  # round 1 as its diagnosis left it
    assert ready() == (Step("candidate", 1, "w1c1"), Step("candidate", 1, "w1c2"))
    node = Node(id="r001.w1c2", round=1, slot="w1c2", why="missing_cue", parent_id="v",
                state="errored", reason="r")  # fmt: skip
    store.write(layout.node(node.id), node)  # the second finished first
    assert ready() == (Step("candidate", 1, "w1c1"),)
    first = node.model_copy(update={"id": "r001.w1c1", "slot": "w1c1"})
    store.write(layout.node(first.id), first)
    assert ready() == (Step("decide", 1, "decide"),)
