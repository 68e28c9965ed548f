"""Parent selection over the archive, as the official DGM code does it (`DGM_outer.py`,
`choose_selfimproves`), configurable (`config.ParentSelection`):

    s_i = 1 / (1 + exp(-slope * (score_i - midpoint)))        slope 10, midpoint 0.5
    h_i = 1 / (1 + children_i)                                children: admitted ones
    p_i = s_i * h_i / sum_j s_j * h_j                         `score_child_prop` (default)

`score_prop` drops h, `random` is uniform, `best` takes the highest scores without a draw
(the official code sorts ascending there and so takes the lowest: we take the highest).
The paper's `no_darwin` ablation (`open_ended: false`) is `latest`: every parent is the last
admitted member.

`Archive` draws by rejection: a member picked uniformly is kept with chance w_i / bound
(bound >= every weight), else another is picked. That is exactly the distribution p_i above,
and each admission and draw costs O(1), not O(n): the expected number of picks is bound /
mean(w), which depends on the scores, not on the archive's size (the children factor averages
at least 1/2: a tree of n members has n - 1 children). An iteration at 1,000 members costs
about what it costs at 10 (`bench/dgm_archive_bench.py`).
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


def probabilities(scores: list[float], children: list[int], rule: ParentSelection) -> list[float]:
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
    weights a draw reads, each kept up to date in O(1)."""

    def __init__(self, rule: ParentSelection) -> None:
        self.rule = rule
        self.members: list[Member] = []
        self._position: dict[str, int] = {}
        self._weights: list[float] = []
        self._bound = 0.0  # >= every weight: a weight only falls once its member is in

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
        self._weights.append(weight(score, 0, self.rule))
        self._bound = max(self._bound, self._weights[-1])
        i = self._position.get(parent_id) if parent_id else None
        if i is not None:
            parent = self.members[i]
            parent.children += 1
            self._weights[i] = weight(parent.score, parent.children, self.rule)
        return member

    def draw(self, rng: random.Random) -> Member:
        """One parent, drawn with probability weight / total (by rejection)."""
        n, weights, bound = len(self.members), self._weights, self._bound
        while True:
            i = int(rng.random() * n)
            if rng.random() * bound < weights[i]:
                return self.members[i]

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
