"""Parent selection as the official DGM code writes it: sigmoid(10 (score - 0.5)) times
1/(1 + children), normalised; the archive's index draws by exactly those weights."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from flashrsi_dagster.algorithms.dgm.config import ParentSelection
from flashrsi_dagster.algorithms.dgm.selection import Archive, probabilities, sigmoid, weight

PAPER = ParentSelection()


def test_the_default_is_the_papers_score_child_prop_with_slope_10_at_one_half():
    assert (PAPER.mode, PAPER.slope, PAPER.midpoint) == ("score_child_prop", 10.0, 0.5)
    assert sigmoid(0.5) == 0.5
    assert sigmoid(0.8) == pytest.approx(1 / (1 + math.exp(-3)))
    assert weight(0.8, 2, PAPER) == pytest.approx(sigmoid(0.8) / 3)


def test_probabilities_are_the_normalised_weights_and_few_children_weigh_more():
    p = probabilities([0.6, 0.6, 0.2], [0, 3, 0], PAPER)

    assert sum(p) == pytest.approx(1.0)
    assert p[0] == pytest.approx(4 * p[1])  # same score, 1/(1+0) vs 1/(1+3)
    assert p[2] > 0  # a low scorer can still be drawn: stepping stones


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("score_prop", [sigmoid(0.6), sigmoid(0.6), sigmoid(0.2)]), ("random", [1, 1, 1])],
)
def test_the_other_modes_drop_the_children_bonus_or_the_score(mode, expected):
    p = probabilities([0.6, 0.6, 0.2], [0, 3, 0], ParentSelection(mode=mode))

    assert p == pytest.approx([e / sum(expected) for e in expected])


def test_the_archive_counts_admitted_children_and_draws_by_the_formula():
    archive = Archive(PAPER)
    for sid, score, parent in [("s", 0.3, None), ("a", 0.6, "s"), ("b", 0.8, "a"), ("c", 0.2, "s")]:
        archive.add(sid, score, parent)
    members = archive.members
    assert [m.children for m in members] == [2, 1, 0, 0]
    expected = probabilities([m.score for m in members], [m.children for m in members], PAPER)

    rng = random.Random(7)
    drawn = Counter(archive.draw(rng).snapshot_id for _ in range(20_000))

    for member, p in zip(members, expected, strict=True):
        assert drawn[member.snapshot_id] / 20_000 == pytest.approx(p, abs=0.015)


def test_the_draw_is_a_pure_function_of_the_seed():
    def draws(seed: int) -> list[str]:
        archive = Archive(PAPER)
        for i in range(50):
            archive.add(f"m{i}", (i % 7) / 7, f"m{i // 2}" if i else None)
        return [m.snapshot_id for m in archive.choose(5, random.Random(seed))]

    assert draws(3) == draws(3)


def test_no_open_ended_exploration_always_takes_the_latest_and_best_takes_the_highest():
    archive = Archive(ParentSelection(mode="best"))
    for sid, score in [("s", 0.3), ("a", 0.9), ("b", 0.1)]:
        archive.add(sid, score, None if sid == "s" else "s")

    assert [m.snapshot_id for m in archive.choose(2, random.Random(0), latest=True)] == ["b", "b"]
    assert [m.snapshot_id for m in archive.choose(3, random.Random(0))] == ["a", "s", "b"]
