"""The Pareto frontier of dev score x context tokens, from the round records alone."""

from __future__ import annotations

from flashrsi_dagster.algorithms.meta_harness.frontier import frontier, points
from flashrsi_dagster.algorithms.meta_harness.plan import State
from flashrsi_dagster.algorithms.meta_harness.records import RoundRecord
from flashrsi_dagster.algorithms.meta_harness.report import summary


def _round(k: int, score: float | None, tokens: int | None, slot: str = "c0", **kw) -> RoundRecord:
    status = kw.pop("status", "evaluated")
    return RoundRecord(
        round=k,
        slot=slot,
        status=status,
        snapshot_id=f"{k}{slot}".ljust(40, "0"),
        dev_score=score,
        dev_tasks=10,
        dev_input_tokens=tokens,
        **kw,
    )


ROUNDS = [
    _round(0, 0.4, 1000),  # the seed: cheapest
    _round(1, 0.6, 3000),  # better but dearer: on the frontier
    _round(1, 0.5, 4000, slot="c1"),  # dominated by round 1
    _round(2, 0.7, 9000),  # best: on the frontier
    _round(3, None, None, status="rejected", reason="no change"),
    _round(4, 0.7, 9000),  # equal to round 2 on both: kept, after it
    _round(5, 0.9, None),  # tokens not recorded (an older record): left out, not guessed
]


def test_the_frontier_keeps_exactly_the_undominated_candidates_best_first():
    members = [(p.round, p.slot) for p in frontier(ROUNDS)]
    assert members == [(2, "c0"), (4, "c0"), (1, "c0"), (0, "c0")]
    assert frontier(ROUNDS)[-1].context_tokens_per_task == 100.0
    assert {(p.round, p.slot) for p in points(ROUNDS)} == set(members) | {(1, "c1")}


def test_a_score_on_another_version_of_dev_is_not_on_the_frontier():
    rounds = [_round(0, 0.4, 1000, eval_set="dev/e1"), _round(1, 0.9, 10, eval_set="dev/e2")]
    assert [p.round for p in frontier(rounds)] == [0]


def test_the_summary_shows_the_frontier():
    lines = summary(State(rounds=tuple(ROUNDS), promotion=None, test=None))
    line = next(line for line in lines if line.startswith("frontier"))
    assert "round 2 (dev 0.700, 900 tokens/task)" in line and "round 1 c1" not in line
