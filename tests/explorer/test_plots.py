"""The figures behind the explorer's plots: the best score per round and so far, the Pareto
frontier of accuracy x tokens, the gap between the search's score and the sealed test's."""

from __future__ import annotations

from flashrsi_dagster.explorer.candidates import Node, Tree
from flashrsi_dagster.explorer.plots import dev_test_gap, pareto, plots, score_over_rounds


def _node(id_: str, round_: int | None, score=None, tokens=None, test=None) -> Node:
    return Node(
        id=id_, snapshot_id=None, parent=None, produced_by=None, round=round_, slot="c0",
        outcome="rejected", scope=None, score=score, tokens=tokens, sealed_test=test,
    )  # fmt: skip


def test_score_over_rounds_is_each_round_s_best_and_the_best_so_far():
    nodes = [_node("a", 0, 0.5), _node("b", 1, 0.7), _node("c", 1, 0.4), _node("d", 2, 0.6),
             _node("e", 3), _node("f", None, 0.9)]  # fmt: skip
    assert score_over_rounds(nodes) == {
        "rounds": [0, 1, 2],
        "best": [0.5, 0.7, 0.6],
        "best_so_far": [0.5, 0.7, 0.7],
    }


def test_the_pareto_frontier_holds_the_nodes_no_other_beats_on_score_and_tokens():
    nodes = [
        _node("cheap", 1, 0.5, 100),
        _node("dear", 1, 0.9, 900),
        _node("dominated", 1, 0.4, 500),  # dearer and worse than "cheap"
        _node("tied", 1, 0.5, 300),  # as good as "cheap" for more tokens
        _node("middle", 2, 0.7, 400),
        _node("unmeasured", 2, 0.95),
    ]
    found = pareto(nodes)
    assert found["frontier"] == ["cheap", "middle", "dear"]
    assert [p["id"] for p in found["points"]] == ["cheap", "tied", "middle", "dominated", "dear"]


def test_the_dev_test_gap_is_the_search_score_minus_the_sealed_test_of_each_tested_node():
    tree = Tree(
        experiment="x", algorithm="evolver", baseline=None, sealed_test=None,
        nodes=[_node("vanilla", None, 0.4, test=0.5), _node("b", 1, 0.8, test=0.6),
               _node("untested", 1, 0.9)],
    )  # fmt: skip
    rows = dev_test_gap(tree)
    assert [(r["id"], r["search"], r["test"]) for r in rows] == [
        ("b", 0.8, 0.6),
        ("vanilla", 0.4, 0.5),
    ]
    assert [round(r["gap"], 9) for r in rows] == [0.2, -0.1]
    assert set(plots(tree)) == {"score_over_rounds", "pareto", "dev_test_gap"}
