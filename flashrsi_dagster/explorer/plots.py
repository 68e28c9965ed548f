"""The figures behind the explorer's plots, from the candidate tree: the score over rounds
with the best so far, the Pareto frontier of accuracy x tokens, and the dev-test gap.

Computed here, not in the page, so that they are tested as the engine is."""

from __future__ import annotations

from typing import Any

from flashrsi_dagster.explorer.candidates import Node, Tree


def score_over_rounds(nodes: list[Node]) -> dict[str, list]:
    """Per round with a score: its best score, and the best of it and every earlier round."""
    best: dict[int, float] = {}
    for n in nodes:
        if n.round is not None and n.score is not None:
            best[n.round] = max(best.get(n.round, n.score), n.score)
    rounds = sorted(best)
    so_far, running = [], float("-inf")
    for k in rounds:
        running = max(running, best[k])
        so_far.append(running)
    return {"rounds": rounds, "best": [best[k] for k in rounds], "best_so_far": so_far}


def pareto(nodes: list[Node]) -> dict[str, Any]:
    """Every node with both a score and a token figure, and the frontier among them: those no
    other node beats on both (a higher score for no more tokens, or as high for fewer)."""
    points = sorted(
        (n for n in nodes if n.score is not None and n.tokens is not None),
        key=lambda n: (n.tokens, -n.score),
    )
    frontier, top = [], float("-inf")
    for n in points:  # fewest tokens first: a node is on the frontier if it beats all before
        if n.score > top:
            frontier.append(n.id)
            top = n.score
    return {
        "points": [{"id": n.id, "tokens": n.tokens, "score": n.score} for n in points],
        "frontier": frontier,
    }


def dev_test_gap(tree: Tree) -> list[dict[str, Any]]:
    """Each version with a sealed test score beside the search's score for it, and the gap
    (search minus test: positive means the search overrated it)."""
    rows = []
    for n in tree.nodes:
        if n.sealed_test is None or n.score is None:
            continue
        rows.append(
            {
                "id": n.id,
                "round": n.round,
                "slot": n.slot,
                "search": n.score,
                "test": n.sealed_test,
                "gap": n.score - n.sealed_test,
            }
        )
    return sorted(rows, key=lambda r: (r["round"] is None, r["round"] or 0, r["id"]))


def plots(tree: Tree) -> dict[str, Any]:
    return {
        "score_over_rounds": score_over_rounds(tree.nodes),
        "pareto": pareto(tree.nodes),
        "dev_test_gap": dev_test_gap(tree),
    }
