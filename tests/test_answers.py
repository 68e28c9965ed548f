"""Structured answers asked again: the parse error goes back to the model, bounded, with every
run kept (`answers.ask_until_read`, shared by ModularRSI and the Evolver)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from flashrsi_dagster.answers import ProtocolError, ask_until_read, attempt_name, read_answer
from flashrsi_dagster.records import Status, Trajectory


class Verdict(BaseModel):
    verdict: str


def answering(*answers: str | None):
    """A model role that gives `answers` in turn, and the prompts it was given."""
    prompts: list[str] = []
    queue = list(answers)

    def run(prompt: str) -> Trajectory:
        prompts.append(prompt)
        answer = queue.pop(0)
        status = Status.SUCCESS if answer is not None else Status.ERROR
        return Trajectory(task_id="ask", snapshot_id="s", status=status, answer=answer)

    return run, prompts


def read(run: Trajectory) -> Verdict:
    if run.status != Status.SUCCESS:
        raise RuntimeError("the run failed")
    return read_answer(run.answer, Verdict, "the review")


def test_a_malformed_answer_is_asked_again_with_its_parse_error_and_each_run_kept():
    run, prompts = answering("no json", '{"verdict": 1}', '{"verdict": "accept"}')
    kept: list[tuple[str | None, int | None]] = []
    found = ask_until_read(
        run, read, "Review this.", retries=2, keep=lambda t, n: kept.append((t.answer, n))
    )
    assert found.verdict == "accept"
    assert kept == [("no json", 1), ('{"verdict": 1}', 2), ('{"verdict": "accept"}', None)]
    assert prompts[0] == "Review this."
    assert prompts[1].startswith("Review this.") and "without a JSON object" in prompts[1]
    assert "verdict: Input should be a valid string" in prompts[2]
    assert "without a JSON object" not in prompts[2]  # only the last error is told
    assert [attempt_name("review", n) for _, n in kept] == [
        "review-malformed-1",
        "review-malformed-2",
        "review",
    ]


def test_the_last_malformed_answer_counts_when_the_retries_are_spent():
    run, prompts = answering("no", "still no", "never")
    kept = []
    with pytest.raises(ProtocolError, match=r"without a JSON object.*\(2 answers, none readable\)"):
        ask_until_read(run, read, "Review.", retries=1, keep=lambda t, n: kept.append(n))
    assert kept == [1, None] and len(prompts) == 2
    run, _ = answering("no")
    with pytest.raises(ProtocolError, match=r"without a JSON object: 'no'$"):
        ask_until_read(run, read, "Review.", retries=0, keep=lambda t, n: None)


def test_a_failed_run_is_not_retried_and_is_kept_as_the_deciding_one():
    run, prompts = answering(None, '{"verdict": "accept"}')
    kept = []
    with pytest.raises(RuntimeError, match="the run failed"):
        ask_until_read(run, read, "Review.", retries=2, keep=lambda t, n: kept.append(n))
    assert kept == [None] and len(prompts) == 1
