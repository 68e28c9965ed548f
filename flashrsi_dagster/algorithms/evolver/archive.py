"""The QD archive: the best confirmed candidate per (WHERE x WHY) cell, and cross-cell
recombination candidates (two elites of different cells merged), which go through the same
gates as any other candidate."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import combinations

from flashrsi_dagster.algorithms.evolver.next_parent import rank_key
from flashrsi_dagster.algorithms.evolver.nodes import Node
from flashrsi_dagster.algorithms.evolver.where import cell_of


def elites(nodes: Iterable[Node]) -> dict[str, Node]:
    """Per cell, the library node (it passed every gate) with the best confirm mean; a tie
    keeps the earlier round, then the lower slot (`next_parent.rank_key`, the library's own
    order): the same elite whatever order the nodes come in."""
    best: dict[str, Node] = {}
    for node in nodes:
        if not node.library or node.where is None or node.confirm_mean is None:
            continue
        cell = cell_of(node.where, node.why)  # type: ignore[arg-type]
        held = best.get(cell)
        if held is None or rank_key(node) < rank_key(held):
            best[cell] = node
    return best


def recombinations(cells: dict[str, Node], limit: int) -> list[tuple[Node, Node]]:
    """Pairs of elites from different cells, the strongest pairs first (a tie in cell order),
    at most `limit`."""
    pairs = [
        (a, b)
        for (_, a), (_, b) in combinations(sorted(cells.items()), 2)
        if a.snapshot_id and b.snapshot_id and a.snapshot_id != b.snapshot_id
    ]
    pairs.sort(key=lambda p: -((p[0].confirm_mean or 0) + (p[1].confirm_mean or 0)))
    return pairs[:limit]
