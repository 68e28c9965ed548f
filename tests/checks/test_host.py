"""The host's checks as plain data: a failed check of severity `warn` is a warning, and says
so in its result, where Dagster's UI labels every failed check "Failed"."""

from __future__ import annotations

from flashrsi_dagster.checks import host


def test_a_rejected_edit_is_a_warning_and_an_adopted_one_passes():
    warned = host.adopted("rejected", "review gate: too broad", was_adopted=False)
    kept = host.adopted("accepted", None, was_adopted=True)

    assert (warned.status, warned.severity) == ("warning", "warn")
    assert warned.result == "warning: rejected: review gate: too broad"
    assert warned.metadata == {"outcome": "rejected", "reason": "review gate: too broad"}
    assert (kept.status, kept.result) == ("passed", "passed: accepted")


def test_a_failed_error_check_is_a_failure_and_a_gap_over_its_threshold_a_warning():
    overlap = host.splits_disjoint("task t1 is in train and test")
    gap = host.dev_test_gap(0.9, 0.5, threshold=0.1)
    close = host.dev_test_gap(0.6, 0.55, threshold=0.1)

    assert overlap.status == "failed" and overlap.result.startswith("failed: task t1")
    assert gap.status == "warning"
    assert gap.summary == "dev 0.900 exceeds test 0.500 by 0.400, over the 0.100 threshold"
    assert gap.metadata == {"dev_test_gap": 0.4, "threshold": 0.1}
    assert close.status == "passed"


def test_a_check_with_nothing_to_judge_passes_and_says_why():
    unchecked = host.content(None, "the seed")
    unscored = host.score_in_unit_interval({}, 9)
    uncompared = host.behaviour("no parent")

    assert unchecked.result == "passed: not checked: the seed"
    assert unscored.status == "passed" and unscored.metadata == {"rollouts": 0}
    assert uncompared.summary == "not compared: no parent"
