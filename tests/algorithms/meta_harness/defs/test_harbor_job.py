"""Meta-Harness on the built-in Terminal-Bench-style tasks through Harbor and the local
environment, driven exactly as `flashrsi run` drives it: Dagster runs on the persistent
instance under the experiment home, every rollout one Harbor trial scored by its verifier."""

from __future__ import annotations

import uuid
from pathlib import Path

import dagster as dg
import pytest

from flashrsi_dagster.algorithms.meta_harness import records as mh
from flashrsi_dagster.benchmarks.harbor.suite import TASKS_DIR
from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.cli_driver import drive
from flashrsi_dagster.deployment.instance import persistent_instance
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.llm.endpoints import offline_server
from flashrsi_dagster.records import Status, read_record
from flashrsi_dagster.rollouts.record import RolloutRecord
from tests.environments.local_chroot.conftest import needs_local_env

pytestmark = [
    needs_local_env,
    # Raised by Harbor 0.25's own Trial code on every trial, not by ours.
    pytest.mark.filterwarnings("ignore:Task.checksum will be deprecated:DeprecationWarning"),
]

EXAMPLE = Path(__file__).parents[4] / "examples" / "meta_harness_harbor.yaml"
DEV, TEST = ("json-user-report", "release-tarball"), ("env-settings-file", "error-log-report")


def _run(home: Path, monkeypatch: pytest.MonkeyPatch, *overrides: str):
    """The example through `drive`, as `flashrsi run` runs it; returns the final state, the
    progress lines, the Dagster runs on the home's instance and how often each asset was
    materialized."""
    monkeypatch.setenv("DAGSTER_HOME", str(home / ".dagster"))  # as `drive` sets it
    config = load_config(EXAMPLE, ["--experiment.home", str(home), *overrides])
    lines: list[str] = []
    state = drive(open_experiment(config), say=lines.append)
    instance = persistent_instance(home)
    try:
        runs = instance.get_runs()
        counts = {
            key.path[-1]: len(instance.fetch_materializations(key, limit=100).records)
            for key in instance.all_asset_keys()
        }
    finally:
        instance.dispose()
    return state, lines, runs, counts


def _layout(home: Path) -> mh.Layout:
    return mh.Layout(home / "meta-harness-harbor" / "records" / "meta_harness")


def _rollouts(path: Path):
    return RolloutRecord(path, None).load()


def _harbor_trial(trajectory) -> bool:
    """Scored by a Harbor trial's verifier: the trial is named after the task, the reward is
    the verifier's (None would mean it produced none)."""
    meta = trajectory.metadata
    return meta["trial"].startswith(f"{trajectory.task_id}__") and meta["reward"] is not None


def test_the_example_runs_seed_step_promotion_and_sealed_test_through_harbor(tmp_path, monkeypatch):
    home = tmp_path / "home"

    state, lines, runs, materialized = _run(home, monkeypatch)

    layout = _layout(home)
    assert [run.status for run in runs] == [dg.DagsterRunStatus.SUCCESS] * 3
    assert [line for line in lines if line.startswith("==")] == [
        "== evaluate_seed (round 0)",
        "== propose (round 1)",
        "== promote",  # promotion and the sealed test materialize in one run
    ]
    seed = read_record(layout.round(0), mh.RoundRecord)
    assert (seed.status, seed.dev_tasks, seed.dev_score) == ("evaluated", 2, 0.0)
    dev = _rollouts(layout.rollouts(0))
    assert sorted(t.task_id for t in dev) == sorted(DEV)
    assert all(_harbor_trial(t) and t.status == Status.FAILURE for t in dev)
    # The demo Worker only improves classification prompts: on terminal tasks it edits nothing.
    assert read_record(layout.edit(1), mh.EditRecord).status == "noop"
    assert read_record(layout.round(1), mh.RoundRecord).status == "rejected"
    assert not layout.rollouts(1).exists()
    promotion = read_record(layout.promotion, mh.Promotion)
    assert (promotion.round, promotion.snapshot_id) == (0, seed.snapshot_id)
    test = _rollouts(layout.test_rollouts)
    assert sorted(t.task_id for t in test) == sorted(TEST)  # each test task exactly once
    assert all(_harbor_trial(t) and t.split == "test" for t in test)
    result = read_record(layout.test, mh.TestResult)
    assert (result.snapshot_id, result.test_tasks, result.test_score) == (seed.snapshot_id, 2, 0)
    assert state.test == result
    assert (materialized["promotion"], materialized["sealed_test_score"]) == (1, 1)
    assert materialized["trajectories"] == 2  # rounds 0 and 1 (a rejected step is empty)


def _shell(command: str) -> dict:
    return {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


def _scripts() -> tuple[str, str, str]:
    """Scripts on the process's offline model simulator (the one `base_url: offline` uses):
    a target that solves `json-user-report` with its reference solution, run by its shell
    inside the task's environment, and a Worker that adds a line to the prompt. Returns the
    two model ids and the added line."""
    solve = (TASKS_DIR / "json-user-report" / "solution" / "solve.sh").read_text()
    line = f"Check your work with a command before you finish ({uuid.uuid4().hex[:8]})."
    server, tag = offline_server(), uuid.uuid4().hex[:8]
    # One shell call, then the answer; rollouts run one at a time, so they take turns in order.
    target = server.add_script(
        f"harbor-target-{tag}",
        [_shell(f"pwd; if [ -f /app/users.json ]; then\n{solve}\nfi"), {"text": "done"}] * 8,
    )
    worker = server.add_script(
        f"harbor-worker-{tag}",
        [_shell(f"printf '\\n%s\\n' '{line}' >> prompts/system.md"), {"text": "Added a line."}],
    )
    return target, worker, line


def test_a_committed_edit_is_evaluated_in_harbor_and_the_target_acts_in_the_environment(
    tmp_path, monkeypatch
):
    home = tmp_path / "home"
    target, worker, line = _scripts()

    state, _, runs, _ = _run(
        home,
        monkeypatch,
        "--agent.llm.model",
        target,
        "--algorithm.worker.llm.model",
        worker,
        "--benchmark.concurrency",
        "1",
    )

    layout = _layout(home)
    assert [run.status for run in runs] == [dg.DagsterRunStatus.SUCCESS] * 3
    edit = read_record(layout.edit(1), mh.EditRecord)
    assert (edit.status, edit.changed) == ("committed", ["M prompts/system.md"])
    seed, step = (read_record(layout.round(k), mh.RoundRecord) for k in (0, 1))
    assert (seed.dev_score, step.dev_score, step.snapshot_id) == (0.5, 0.5, edit.snapshot_id)
    for k, snapshot in ((0, seed.snapshot_id), (1, edit.snapshot_id)):
        by_task = {t.task_id: t for t in _rollouts(layout.rollouts(k))}
        solved, unsolved = by_task["json-user-report"], by_task["release-tarball"]
        # The verifier saw what the agent's commands did inside the environment.
        assert (solved.status, solved.metadata["reward"]) == (Status.SUCCESS, 1.0)
        assert (unsolved.status, unsolved.metadata["reward"]) == (Status.FAILURE, 0.0)
        for trajectory in by_task.values():
            assert _harbor_trial(trajectory) and trajectory.snapshot_id == snapshot
            output = next(m["content"] for m in trajectory.messages if m["role"] == "tool")
            assert output.splitlines()[1] == "/app"  # `pwd`: the task's root, not the host's
        system = next(m["content"] for m in solved.messages if m["role"] == "system")
        assert (line in system) == (k == 1)  # round 1 ran the edited harness
    promotion = read_record(layout.promotion, mh.Promotion)
    assert (promotion.round, promotion.snapshot_id) == (0, seed.snapshot_id)  # a tie keeps 0
    test = _rollouts(layout.test_rollouts)
    assert sorted(t.task_id for t in test) == sorted(TEST)
    assert state.test.snapshot_id == seed.snapshot_id
