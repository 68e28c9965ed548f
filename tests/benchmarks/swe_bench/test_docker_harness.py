"""The tiny set's environment as a Docker image built here (on the base made from Debian's
archive, the tests' runtime from Debian's packages), a patch evaluated in it by the `swebench`
package's own harness (`run_instance`) and graded by its `get_eval_report`."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from flashrsi_dagster.benchmarks.base import BenchmarkError
from flashrsi_dagster.benchmarks.swe_bench import SWEBench
from flashrsi_dagster.benchmarks.swe_bench.docker_harness import (
    ENVIRONMENT_BASE,
    HarnessError,
    build_instance_image,
    evaluate,
    graded_log,
)
from flashrsi_dagster.records import Status
from tests.benchmarks.swe_bench.test_rollout import _applying, _rollout
from tests.conftest import needs_jails

TINY = Path(__file__).parents[3] / "examples" / "swe_bench_tiny"
SOURCE = TINY / "repos" / "flashrsi__tinytext"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def instance_image(docker_engine):
    """Instance 2's image (its repository at the base commit in /testbed, python3 and pytest
    from Debian): built once per engine, then found in its cache."""
    from flashrsi_dagster.images.engine import ImageError
    from flashrsi_dagster.images.task_bases import ensure_task_base_images

    try:
        ensure_task_base_images((ENVIRONMENT_BASE,))
    except ImageError as exc:
        pytest.skip(f"no {ENVIRONMENT_BASE} base image can be made here: {exc}")
    task = next(t for t in SWEBench(TINY).tasks() if t.id == "flashrsi__tinytext-2")
    return task, build_instance_image(task, SOURCE)


def test_the_image_holds_the_repository_at_the_base_commit_and_the_tests_runtime(
    instance_image,
):
    task, image = instance_image
    inside = "git -C /testbed rev-parse HEAD && python3 -m pytest --version"

    done = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", image, "bash", "-c", inside],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip

    assert image == "sweb.eval.x86_64.flashrsi__tinytext-2:latest"
    assert done.stdout.split()[0] == task.verifier["base_commit"]
    assert "pytest" in done.stdout + done.stderr


def test_in_the_image_the_gold_patch_resolves_and_an_empty_one_does_not(instance_image, tmp_path):
    task, image = instance_image

    gold = evaluate(task, task.verifier["gold_patch"], image, tmp_path / "gold")
    empty = evaluate(task, "", image, tmp_path / "empty")

    assert gold["resolved"] and gold["patch_successfully_applied"]
    assert gold["tests_status"]["FAIL_TO_PASS"]["success"] == task.verifier["fail_to_pass"]
    assert gold["tests_status"]["PASS_TO_PASS"]["success"] == task.verifier["pass_to_pass"]
    assert not empty["resolved"]
    assert empty["tests_status"]["FAIL_TO_PASS"]["failure"] == task.verifier["fail_to_pass"]
    assert empty["tests_status"]["PASS_TO_PASS"]["failure"] == []
    # the harness's own log of the run in the container
    log = tmp_path / "gold" / "flashrsi" / "flashrsi" / task.id / "test_output.txt"
    assert "passed" in log.read_text()


def test_a_patch_that_does_not_apply_is_unresolved_with_the_harness_saying_so(
    instance_image, tmp_path
):
    task, image = instance_image
    stale = task.verifier["gold_patch"].replace("return text[:width]", "return text[:w]")

    report = evaluate(task, stale, image, tmp_path)

    assert not report["resolved"]
    assert ">>>>> Patch Apply Failed" in report["error"]


def test_an_image_that_does_not_exist_is_the_harness_failing_not_the_patch(tmp_path, docker_engine):
    """The harness's own failure (here: no such image) is raised, so the rollout engine reruns
    it as infrastructure, instead of scoring the patch unresolved."""
    task = next(t for t in SWEBench(TINY).tasks() if t.id == "flashrsi__tinytext-2")

    with pytest.raises(HarnessError, match="flashrsi__tinytext-2"):
        evaluate(task, task.verifier["gold_patch"], "sweb.eval.x86_64.absent:latest", tmp_path)


def test_two_evaluations_of_one_instance_run_side_by_side(instance_image, tmp_path):
    """Each call is its own harness run (container, log folder): two at once both grade."""
    task, image = instance_image
    patches = {"gold": task.verifier["gold_patch"], "empty": ""}

    with ThreadPoolExecutor(2) as pool:
        done = {k: pool.submit(evaluate, task, p, image, tmp_path / k) for k, p in patches.items()}
        reports = {k: future.result() for k, future in done.items()}

    assert (reports["gold"]["resolved"], reports["empty"]["resolved"]) == (True, False)
    assert all(graded_log(tmp_path / k, task).is_file() for k in patches)


@needs_jails
def test_a_rollout_graded_in_the_image_resolves_with_the_fix_and_not_without(
    instance_image, server
):
    """`benchmark.swe_bench_grading: docker`: the agent works here, jailed, and its patch is
    graded in the instance's image by the harness."""
    task, image = instance_image
    benchmark = SWEBench(TINY, grading="docker")
    benchmark.preflight()
    fix = _applying(task.verifier["gold_patch"])

    fixed = _rollout(server, benchmark, task, "fixes-in-image", [fix])
    unfixed = _rollout(server, benchmark, task, "looks-in-image", ["git status"])

    assert (fixed.status, fixed.score, fixed.metadata["graded_in"]) == (Status.SUCCESS, 1.0, image)
    assert "PASSED tests/" in fixed.metadata["test_log_tail"]  # the container's test output
    assert (unfixed.status, unfixed.score, unfixed.answer) == (Status.FAILURE, 0.0, "")
    assert not unfixed.metadata["swe_bench"]["resolved"]


def test_grading_in_docker_is_refused_before_a_batch_where_no_engine_answers(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")

    with pytest.raises(BenchmarkError, match="swe_bench_grading: docker cannot run"):
        SWEBench(TINY, grading="docker").preflight()
