"""Parent selection over the archive, as the official DGM code does it (`DGM_outer.py`,
`choose_selfimproves`), configurable (`config.ParentSelection`):

    s_i = 1 / (1 + exp(-slope * (score_i - midpoint)))        slope 10, midpoint 0.5
    h_i = 1 / (1 + children_i)                                children: admitted ones
    p_i = s_i * h_i / sum_j s_j * h_j                         `score_child_prop` (default)

`score_prop` drops h, `random` is uniform, `best` takes the highest scores without a draw
(the official code sorts ascending there and so takes the lowest: we take the highest).
The paper's `no_darwin` ablation (`open_ended: false`) is `latest`: every parent is the last
admitted member.

`Archive` keeps the weights in a Fenwick tree, so that adding a member, counting a child and
drawing a parent each cost O(log n): an iteration at 1,000 members costs about what it costs
at 10 (`bench/dgm_archive_bench.py`). A draw is one uniform number u in [0, total) and the
first member whose running sum of weights exceeds u, in admission order: the same member
the plain formula picks, whatever index computes the sums.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from flashrsi_dagster.algorithms.dgm.config import ParentSelection


def sigmoid(score: float, slope: float = 10.0, midpoint: float = 0.5) -> float:
    """The paper's squashing of a score in [0, 1]; never 0, so every member can be drawn."""
    return 1.0 / (1.0 + math.exp(-slope * (score - midpoint)))


def weight(score: float, children: int, rule: ParentSelection) -> float:
    """One member's unnormalised chance of being drawn as a parent."""
    if rule.mode == "random":
        return 1.0
    squashed = sigmoid(score, rule.slope, rule.midpoint)
    return squashed / (1 + children) if rule.mode == "score_child_prop" else squashed


def probabilities(
    scores: list[float], children: list[int], rule: ParentSelection
) -> list[float]:
    """Each member's chance of being drawn (the formula written out, for tests and views)."""
    weights = [weight(s, c, rule) for s, c in zip(scores, children, strict=True)]
    total = sum(weights)
    return [w / total for w in weights]


@dataclass
class Member:
    snapshot_id: str
    score: float
    parent_id: str | None
    children: int = 0


class Archive:
    """The admitted members in admission order, their admitted children counted, and the
    index that draws a parent in O(log n)."""

    def __init__(self, rule: ParentSelection) -> None:
        self.rule = rule
        self.members: list[Member] = []
        self._position: dict[str, int] = {}
        self._tree: list[float] = [0.0]  # Fenwick tree, 1-based; grows as members come

    def __len__(self) -> int:
        return len(self.members)

    def get(self, snapshot_id: str) -> Member | None:
        i = self._position.get(snapshot_id)
        return None if i is None else self.members[i]

    def add(self, snapshot_id: str, score: float, parent_id: str | None) -> Member:
        """Admit a member; its parent (if admitted) counts one more child."""
        member = Member(snapshot_id, score, parent_id)
        self._position[snapshot_id] = len(self.members)
        self.members.append(member)
        self._grow(weight(score, 0, self.rule))
        parent = self.get(parent_id) if parent_id else None
        if parent is not None:
            before = weight(parent.score, parent.children, self.rule)
            parent.children += 1
            self._bump(self._position[parent.snapshot_id], self._weight(parent) - before)
        return member

    def draw(self, rng: random.Random) -> Member:
        """One parent, drawn by the rule's weights (`latest` and `best` are not draws)."""
        u = rng.random() * self._sum(len(self.members))
        return self.members[self._find(u)]

    def choose(self, k: int, rng: random.Random, *, latest: bool = False) -> list[Member]:
        """The k parents of a generation (repeats allowed, as in the paper)."""
        if not self.members:
            raise ValueError("the archive is empty: the seed is admitted first")
        if latest:
            return [self.members[-1]] * k
        if self.rule.mode == "best":
            ranked = sorted(self.members, key=lambda m: -m.score)  # stable: earlier first
            return [ranked[i % len(ranked)] for i in range(k)]
        return [self.draw(rng) for _ in range(k)]

    # -- the Fenwick tree -------------------------------------------------------------------

    def _weight(self, member: Member) -> float:
        return weight(member.score, member.children, self.rule)

    def _grow(self, value: float) -> None:
        i = len(self._tree)  # the new 1-based position
        low = i - (i & -i)  # the node covers (low, i]: the sum of those already there
        self._tree.append(value + self._sum(i - 1) - self._sum(low))

    def _bump(self, position: int, delta: float) -> None:
        i = position + 1
        while i < len(self._tree):
            self._tree[i] += delta
            i += i & -i

    def _sum(self, n: int) -> float:
        """The weights of the first n members."""
        total = 0.0
        while n > 0:
            total += self._tree[n]
            n -= n & -n
        return total

    def _find(self, u: float) -> int:
        """The 0-based index of the first member whose running sum exceeds u."""
        position, step = 0, 1 << (len(self._tree) - 1).bit_length()
        while step:
            nxt = position + step
            if nxt < len(self._tree) and self._tree[nxt] <= u:
                position, u = nxt, u - self._tree[nxt]
            step >>= 1
        return min(position, len(self.members) - 1)
