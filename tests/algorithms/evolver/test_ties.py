"""Ties between candidates are broken by what the records say, never by the order they are
read in (the order the candidates finished, a directory listing, a resume that read some
records in one process and the rest in another): the same nodes in any order give the same
parent, the same elites and the same means to the last bit."""

from __future__ import annotations

from itertools import permutations

from flashrsi_dagster.algorithms.evolver.archive import elites
from flashrsi_dagster.algorithms.evolver.confirm_gates import Confirmed
from flashrsi_dagster.algorithms.evolver.next_parent import decide
from flashrsi_dagster.algorithms.evolver.nodes import Node


def _node(r: int, slot: str, mean: float, why: str = "missing_cue") -> Node:
    return Node(
        id=f"r{r:03d}.{slot}",
        round=r,
        slot=slot,
        why=why,
        where="prompt",
        parent_id="vanilla",
        snapshot_id=f"sha-{r}-{slot}",
        state="in_library",
        reason="passed every gate",
        confirm_mean=mean,
        vanilla_mean=1 / 3,
        library=True,
    )


def test_tied_candidates_promote_the_same_node_in_any_order():
    # seed 22's round 1: both candidates confirmed at 12/18
    tied = [_node(1, "w1c1", 12 / 18), _node(1, "w1c2", 12 / 18)]

    promoted = {decide(1, order, order, None, "vanilla").promoted for order in permutations(tied)}

    assert promoted == {"r001.w1c1"}  # the lower slot, as the docstring says


def test_tied_elites_of_one_cell_are_the_same_in_any_order():
    tied = [_node(2, "w1c2", 0.7), _node(2, "w1c1", 0.7), _node(3, "w1c1", 0.7)]

    chosen = {elites(order)["prompt:missing_cue"].id for order in permutations(tied)}

    assert chosen == {"r002.w1c1"}  # the earlier round, then the lower slot


def test_the_confirm_mean_of_equal_scores_ties_exactly_in_any_order():
    # partial credit: a float sum in another order differs in its last bit
    # ((0.1 + 0.2) + 0.3 != (0.3 + 0.2) + 0.1)
    one = Confirmed({"t1": [0.1], "t2": [0.2], "t3": [0.3]})
    runs = [Confirmed({"t1": [0.1, 0.2, 0.3]}), Confirmed({"t1": [0.3, 0.2, 0.1]})]

    means = {one.mean(tasks, 1) for tasks in permutations(["t1", "t2", "t3"])}
    rates = {c.rates()["t1"] for c in runs}

    assert means == {0.6 / 3} and len(rates) == 1
