"""Example rollouts of a round: one passing and one failing, chosen the same way every time."""

from __future__ import annotations

from flashrsi_dagster.records import ErrorInfo, Status
from flashrsi_dagster.views import pick_examples
from tests.views.conftest import mini_messages, run_config, trajectory

SPOKE = mini_messages((None, []))
"""A conversation in which the agent said something (here: an empty final answer)."""


def _rollout(task_id: str, status: Status, messages=SPOKE, **fields):
    error = None if status in (Status.SUCCESS, Status.FAILURE) else ErrorInfo(type="E", message="x")
    return trajectory(messages, task_id=task_id, status=status, error=error, **fields)


def test_the_first_success_and_a_wrong_answer_before_any_error():
    rollouts = [
        _rollout("t3", Status.SUCCESS),
        _rollout("t9", Status.INFRA_ERROR),
        _rollout("t5", Status.ERROR),
        _rollout("t1", Status.SUCCESS),
        _rollout("t7", Status.FAILURE, score=0.0),
        _rollout("t2", Status.TIMEOUT),
        _rollout("t6", Status.FAILURE, score=0.0),
    ]

    passing, failing = pick_examples(rollouts)

    assert (passing.task_id, failing.task_id) == ("t1", "t6")
    assert pick_examples(reversed(rollouts)) == (passing, failing)


def test_failures_go_wrong_answer_then_agent_error_then_timeout_then_infrastructure():
    rollouts = [
        _rollout("a", Status.INFRA_ERROR),
        _rollout("b", Status.TIMEOUT),
        _rollout("c", Status.ERROR),
        _rollout("d", Status.FAILURE),
    ]
    chosen = []
    while rollouts:
        _, failing = pick_examples(rollouts)
        chosen.append(failing.status)
        rollouts.remove(failing)

    assert chosen == [Status.FAILURE, Status.ERROR, Status.TIMEOUT, Status.INFRA_ERROR]


def test_a_rollout_with_something_to_read_comes_first_then_task_attempt_and_rerun():
    silent = [run_config(role="target")]  # broke before the model said anything
    rollouts = [
        _rollout("a", Status.ERROR, messages=silent),
        _rollout("b", Status.ERROR, attempt=1),
        _rollout("b", Status.ERROR, attempt=0, metadata={"rerun": 1}),
        _rollout("b", Status.ERROR, attempt=0, metadata={"rerun": 0}),
    ]

    _, failing = pick_examples(rollouts)

    assert (failing.task_id, failing.attempt, failing.metadata) == ("b", 0, {"rerun": 0})


def test_none_where_no_rollout_passed_or_failed():
    assert pick_examples([]) == (None, None)
    assert pick_examples([_rollout("a", Status.SUCCESS)])[1] is None
    assert pick_examples([_rollout("a", Status.FAILURE)])[0] is None
