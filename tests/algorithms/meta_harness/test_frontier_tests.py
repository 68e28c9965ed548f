"""`algorithm.sealed_test_frontier`: after the promoted snapshot's sealed test, every other
member of the frontier the promotion froze is sealed-tested once, recorded as a frontier test,
never a selection."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.meta_harness.plan import State, next_step
from flashrsi_dagster.algorithms.meta_harness.records import Promotion, RoundRecord, TestResult
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.rollouts.record import RolloutRecord
from tests.algorithms.meta_harness.test_run import DRIVERS, EXAMPLE, Driven, _config

FLASHRSI = str(Path(__file__).parents[3] / ".venv" / "bin" / "flashrsi")
ON = ("--algorithm.sealed_test_frontier", "true")
DEMO = ("--algorithm.max_steps", "2", "--benchmark.limit", "9")
"""The demo: its three candidates are all on the frontier (each dearer and better)."""


def _ids(path: Path) -> list[str]:
    return [t.task_id for t in RolloutRecord(path, None).load()]  # type: ignore[arg-type]


def _test(sid: str) -> TestResult:
    return TestResult(snapshot_id=sid, test_score=0.5, test_tasks=3)


def test_the_sealed_test_step_lasts_until_every_frontier_member_has_its_test():
    rounds = tuple(
        RoundRecord(round=k, status="evaluated", snapshot_id=f"s{k}", dev_score=k / 4)
        for k in range(3)
    )
    members = [(2, "c0", "s2"), (1, "c0", "s1"), (0, "c0", "s0")]
    promotion = Promotion(snapshot_id="s2", round=2, dev_score=0.5, ranking=[], frontier=members)
    promotion.ranking = [[r.round, r.snapshot_id, r.dev_score] for r in reversed(rounds)]
    before = State(rounds, promotion, None)
    assert before.untested_frontier() == []  # nothing before the promoted snapshot's own test
    tested = State(rounds, promotion, _test("s2"), (_test("s1"),))
    assert tested.untested_frontier() == [(0, "c0", "s0")]  # the promoted one never again
    assert next_step(tested, 2, frontier=True) == Step("sealed_test")
    assert next_step(tested, 2) == Step("done")  # the seed's rule: the promoted one alone
    done = State(rounds, promotion, _test("s2"), (_test("s1"), _test("s0")))
    assert next_step(done, 2, frontier=True) == Step("done")


@DRIVERS
def test_every_frontier_member_is_sealed_tested_once_after_the_promoted_one(tmp_path, how):
    config = _config(tmp_path, *DEMO, *ON)

    driven = Driven(config, how)
    state, layout, harness = driven.state, driven.layout, driven.harness

    promotion, test = state.promotion, state.test
    assert promotion.snapshot_id == max(state.rounds, key=lambda r: r.dev_score).snapshot_id
    assert len(promotion.frontier) >= 2
    others = [m for m in promotion.frontier if m[2] != promotion.snapshot_id]
    assert [t.snapshot_id for t in state.frontier_tests] == [sid for _, _, sid in others]
    assert test.tested_as == "promoted"
    assert {t.tested_as for t in state.frontier_tests} == {"frontier"}
    for (k, slot, _), result in zip(others, state.frontier_tests, strict=True):
        ids = _ids(layout.frontier_test_rollouts(k, slot))
        assert sorted(ids) == sorted(set(ids)) and len(ids) == result.test_tasks == test.test_tasks
        assert promotion.created < test.created <= result.created  # after the choice, never in it
    summary = "\n".join(harness.summary(state))
    for k, slot, _ in others:
        name = f"round {k}" if slot == "c0" else f"round {k} {slot}"
        assert f"sealed test of frontier member {name} (not promoted)" in summary

    again = MetaHarness(open_experiment(config), log=lambda _: None)
    again.sealed_test()  # a later materialization reads every result back
    again.close()
    assert again.read_state() == state
    for k, slot, _ in others:
        assert len(_ids(layout.frontier_test_rollouts(k, slot))) == test.test_tasks


def test_by_default_only_the_promoted_snapshot_is_sealed_tested(tmp_path):
    driven = Driven(_config(tmp_path, *DEMO), "engine")

    assert driven.state.test.tested_as == "promoted" and driven.state.frontier_tests == ()
    assert len(driven.state.promotion.frontier) >= 2  # there were others to test
    assert sorted(p.name for p in driven.layout.folder.glob("test*")) == ["test.json", "test.jsonl"]


@pytest.mark.slow
def test_a_kill_during_the_frontier_tests_then_resume_tests_each_member_once(tmp_path):
    home = tmp_path / "home"
    args = ["--config", str(EXAMPLE), *DEMO, *ON, "--experiment.home", str(home)]
    run = subprocess.Popen(
        [FLASHRSI, "run", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    records = home / "meta-harness-demo" / "records" / "meta_harness"
    deadline = time.monotonic() + 300
    while not list(records.glob("test-round-*.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    assert (records / "test.json").exists()  # killed in the frontier's tests
    resumed = subprocess.run(
        [FLASHRSI, "resume", "--experiment", "meta-harness-demo", "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr

    config = _config(tmp_path, *DEMO, *ON)  # the same experiment, the same home
    state = MetaHarness(open_experiment(config), log=lambda _: None).read_state()
    members = [m for m in state.promotion.frontier if m[2] != state.promotion.snapshot_id]
    assert [t.snapshot_id for t in state.frontier_tests] == [sid for _, _, sid in members]
    layout = records
    for k, slot, _ in members:
        stem = f"round-{k:03d}" if slot == "c0" else f"round-{k:03d}-{slot}"
        ids = _ids(layout / f"test-{stem}.jsonl")
        assert sorted(ids) == sorted(set(ids)) and len(ids) == state.test.test_tasks
