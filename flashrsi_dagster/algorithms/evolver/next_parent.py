"""The funnel's seventh step: the round's outcome and the next parent.

- The library is every node, of any round, that passed all the gates (its K-run mean over
  the whole train set beat the fixed vanilla's). The best of it (highest confirm mean; a tie
  keeps the earlier node) becomes the parent: `promoted_to_baseline` when it is new.
- No node in the library better than the current parent: the parent is kept, and the next
  round re-diagnoses it.
- The round's outcome, for termination: `beat_vanilla` when one of its own candidates beat
  vanilla; `errored` when every candidate errored (the round produced no evidence: it uses no
  patience); `no_gain` otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

from flashrsi_dagster.algorithms.evolver.nodes import Node
from flashrsi_dagster.algorithms.evolver.records import RoundDecision
from flashrsi_dagster.algorithms.evolver.termination import RoundOutcome


def outcome(nodes: Sequence[Node]) -> RoundOutcome:
    if nodes and all(n.state == "errored" for n in nodes):
        return "errored"
    return "beat_vanilla" if any(n.library for n in nodes) else "no_gain"


def rank_key(node: Node) -> tuple[float, int, str]:
    """The library's order: highest confirm mean first; a tie keeps the earlier node."""
    return (-(node.confirm_mean or 0.0), node.round, node.slot)


def best(library: Sequence[Node]) -> Node | None:
    ranked = [n for n in library if n.library and n.confirm_mean is not None]
    return min(ranked, key=rank_key, default=None)


def decide(
    r: int, nodes: Sequence[Node], library: Sequence[Node], parent: Node | None, vanilla_id: str
) -> RoundDecision:
    """`nodes`: this round's; `library`: every library node so far, this round's included;
    `parent`: the current parent's node (None while the parent is vanilla)."""
    before = parent.snapshot_id if parent is not None and parent.snapshot_id else vanilla_id
    top = best(library)
    kind = outcome(nodes)
    if top is None or top is parent or (parent is not None and top.id == parent.id):
        reason = (
            "no candidate passed every gate"
            if top is None
            else f"the parent {parent.id if parent else 'vanilla'} is still the library's best"
        )
        return RoundDecision(
            round=r,
            outcome=kind,
            parent_before=before,
            parent_after=before,
            reason=f"{reason}: kept, and re-diagnosed next round",
        )
    assert top.snapshot_id is not None
    return RoundDecision(
        round=r,
        outcome=kind,
        parent_before=before,
        parent_after=top.snapshot_id,
        promoted=top.id,
        reason=f"{top.id} is the library's best (K-run mean {top.confirm_mean:.4f} against "
        f"vanilla's {top.vanilla_mean:.4f}): promoted to baseline",
    )
