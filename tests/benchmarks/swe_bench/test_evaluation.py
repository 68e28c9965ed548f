"""The tiny SWE-bench-format set (`examples/swe_bench_tiny`) evaluated as the official harness
evaluates, and graded by the `swebench` package's own `get_eval_report`."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.benchmarks.swe_bench import SWEBench, repos
from flashrsi_dagster.benchmarks.swe_bench.evaluation import (
    evaluation_log,
    files_under_test,
    official_report,
)
from tests.conftest import needs_jails

TINY = Path(__file__).parents[3] / "examples" / "swe_bench_tiny"
SOURCE = TINY / "repos" / "flashrsi__tinytext"


@pytest.fixture(scope="module")
def tasks():
    return {task.id: task for task in SWEBench(TINY).tasks()}


def _report(task, patch: str, work: Path, *, jailed: bool = False) -> dict:
    work.mkdir(exist_ok=True)
    log = work / "test_output.txt"
    log.write_text(evaluation_log(task, SOURCE, patch, work, jailed=jailed))
    return official_report(task, patch, log)


def test_the_tiny_set_is_three_instances_on_one_base_commit_made_from_the_tree(tasks, tmp_path):
    assert sorted(tasks) == [f"flashrsi__tinytext-{n}" for n in (1, 2, 3)]
    made = repos.commit_tree(SOURCE, tmp_path / "repo")
    assert {task.verifier["base_commit"] for task in tasks.values()} == {made}
    assert all(task.verifier["repo"] == "flashrsi/tinytext" for task in tasks.values())


@pytest.mark.parametrize("n", [1, 2, 3])
def test_the_gold_patch_resolves_each_instance(tasks, tmp_path, n):
    task = tasks[f"flashrsi__tinytext-{n}"]

    report = _report(task, task.verifier["gold_patch"], tmp_path)

    assert report["resolved"] and report["patch_successfully_applied"]
    status = report["tests_status"]
    assert status["FAIL_TO_PASS"]["success"] == task.verifier["fail_to_pass"]
    assert status["PASS_TO_PASS"]["success"] == task.verifier["pass_to_pass"]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_an_empty_patch_leaves_the_new_tests_failing(tasks, tmp_path, n):
    task = tasks[f"flashrsi__tinytext-{n}"]

    report = _report(task, "", tmp_path)

    assert not report["resolved"] and report["patch_exists"]
    status = report["tests_status"]
    assert status["FAIL_TO_PASS"]["failure"] == task.verifier["fail_to_pass"]
    assert status["PASS_TO_PASS"]["failure"] == []


def test_a_patch_that_breaks_passing_tests_does_not_resolve(tasks, tmp_path):
    """It makes the new slug tests pass and an old one fail (the separator is ignored)."""
    task = tasks["flashrsi__tinytext-1"]
    wrong = task.verifier["gold_patch"].replace(
        "+    return separator.join(word for word in words if word)",
        '+    return "-".join(word for word in words if word)',
    )
    assert wrong != task.verifier["gold_patch"]

    report = _report(task, wrong, tmp_path)

    status = report["tests_status"]
    assert not report["resolved"]
    assert status["FAIL_TO_PASS"]["failure"] == []
    assert status["PASS_TO_PASS"]["failure"] == ["tests/test_slug.py::test_custom_separator"]


def test_another_instances_gold_patch_does_not_resolve(tasks, tmp_path):
    task = tasks["flashrsi__tinytext-2"]

    report = _report(task, tasks["flashrsi__tinytext-3"].verifier["gold_patch"], tmp_path)

    assert report["patch_successfully_applied"] and not report["resolved"]


def test_a_patch_that_does_not_apply_is_graded_unresolved_without_running_tests(tasks, tmp_path):
    task = tasks["flashrsi__tinytext-1"]
    stale = task.verifier["gold_patch"].replace('[^a-z0-9]", separator', '[^a-z]", separator')

    report = _report(task, stale, tmp_path)

    assert not report["resolved"] and not report["patch_successfully_applied"]
    assert ">>>>> Patch Apply Failed" in (tmp_path / "test_output.txt").read_text()


def test_a_patch_that_edits_the_tests_is_overridden_by_the_test_patch(tasks, tmp_path):
    """The harness restores the test patch's files first: deleting the new failing tests from
    the test file does not make the instance pass."""
    task = tasks["flashrsi__tinytext-3"]
    cheat = (
        "diff --git a/tests/test_stats.py b/tests/test_stats.py\n"
        "--- a/tests/test_stats.py\n+++ b/tests/test_stats.py\n"
        "@@ -1,4 +1,4 @@\n-from tinytext import word_count\n+from tinytext import word_count  # x\n"
        " \n \n def test_empty_text_has_no_words():\n"
    )

    report = _report(task, cheat, tmp_path)

    assert report["patch_successfully_applied"] and not report["resolved"]


def test_the_tests_run_are_the_files_the_test_patch_touches(tasks):
    assert files_under_test(tasks["flashrsi__tinytext-2"].verifier["test_patch"]) == [
        "tests/test_wrap.py"
    ]


@needs_jails
def test_jailed_the_gold_patch_resolves_and_an_empty_one_does_not(tasks, tmp_path):
    task = tasks["flashrsi__tinytext-2"]

    assert _report(task, task.verifier["gold_patch"], tmp_path / "gold", jailed=True)["resolved"]
    assert not _report(task, "", tmp_path / "empty", jailed=True)["resolved"]
