"""A Meta-Harness round on the Docker-environment task suite (`docker_tasks/`), driven as
`flashrsi run` drives it, every rollout one Harbor trial in Harbor's docker environment
(`harbor_environment: docker-offline`): the target's shell commands run in the task's container,
and the Worker's committed edit is evaluated there too."""

from __future__ import annotations

import shutil
import uuid

import dagster as dg
import pytest

from flashrsi_dagster.algorithms.meta_harness import records as mh
from flashrsi_dagster.benchmarks.harbor.suite import DOCKER_TASKS_DIR
from flashrsi_dagster.llm.endpoints import offline_server
from flashrsi_dagster.records import Status, read_record
from flashrsi_dagster.records.chain import IntegrityError
from tests.algorithms.meta_harness.defs.test_harbor_job import (
    _harbor_trial,
    _layout,
    _rollouts,
    _run,
    _shell,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:Task.checksum will be deprecated:DeprecationWarning"),
]

SOLVED, UNSOLVED = "inventory-sqlite-report", "wordfreq-cli-on-path"  # dev, for seed 0
TEST = ("metrics-collector-service",)
TASKS = (SOLVED, UNSOLVED, *TEST)
"""The sealed test on bare Debian (`metrics-collector-service`), where the staged interpreter
runs on the libraries staged with it (`integrations.libraries`); `release-manifest` (Ubuntu) is
left out only to keep the splits these names assume and the round's cost (the ModularRSI test
runs it)."""


def _scripts() -> tuple[str, str, str]:
    """A target that runs the SQLite task's reference solution where its database is (and only
    `pwd` elsewhere), and a Worker that adds a line to the prompt."""
    solve = (DOCKER_TASKS_DIR / SOLVED / "solution" / "solve.sh").read_text()
    line = f"Check your work with a command before you finish ({uuid.uuid4().hex[:8]})."
    server, tag = offline_server(), uuid.uuid4().hex[:8]
    target = server.add_script(
        f"docker-target-{tag}",
        [_shell(f"pwd; if [ -f /app/data/inventory.db ]; then\n{solve}\nfi"), {"text": "done"}] * 8,
    )
    worker = server.add_script(
        f"docker-worker-{tag}",
        [_shell(f"printf '\\n%s\\n' '{line}' >> prompts/system.md"), {"text": "Added a line."}],
    )
    return target, worker, line


@pytest.mark.xfail(
    raises=IntegrityError,
    strict=False,
    reason="seen twice on 2026-12-04: rounds 0 and 1, the promotion and the sealed test's "
    "rollouts all written, then the sealed_test_score step refused: 'records/chain.jsonl: entry "
    "N is not the one this process wrote or read' (not yet understood; the local-environment "
    "twin, test_harbor_job.py, does not show it; not seen in 11 runs under load since: the "
    "refusal now names what the chain held, and bytes another writer appends are refused at once)",
)
def test_a_round_with_a_committed_edit_runs_in_docker_containers(
    tmp_path, monkeypatch, harbor_docker, caplog
):
    home, tasks = tmp_path / "home", tmp_path / "tasks"
    for name in TASKS:
        shutil.copytree(DOCKER_TASKS_DIR / name, tasks / name)
    target, worker, line = _scripts()

    state, _, runs, _ = _run(
        home,
        monkeypatch,
        *("--agent.llm.model", target, "--algorithm.worker.llm.model", worker),
        *("--benchmark.tasks_dir", str(tasks), "--benchmark.split_counts.test", "1"),
        *("--benchmark.harbor_environment", "docker-offline", "--benchmark.concurrency", "1"),
    )

    layout = _layout(home)
    assert [run.status for run in runs] == [dg.DagsterRunStatus.SUCCESS] * 3
    edit = read_record(layout.edit(1), mh.EditRecord)
    assert (edit.status, edit.changed) == ("committed", ["M prompts/system.md"])
    seed, step = (read_record(layout.round(k), mh.RoundRecord) for k in (0, 1))
    assert (seed.dev_score, step.dev_score, step.snapshot_id) == (0.5, 0.5, edit.snapshot_id)
    for k, snapshot in ((0, seed.snapshot_id), (1, edit.snapshot_id)):
        by_task = {t.task_id: t for t in _rollouts(layout.rollouts(k))}
        solved, unsolved = by_task[SOLVED], by_task[UNSOLVED]
        assert (solved.status, solved.metadata["reward"]) == (Status.SUCCESS, 1.0)
        assert (unsolved.status, unsolved.metadata["reward"]) == (Status.FAILURE, 0.0)
        for trajectory in by_task.values():
            assert _harbor_trial(trajectory) and trajectory.snapshot_id == snapshot
            output = next(m["content"] for m in trajectory.messages if m["role"] == "tool")
            assert output.splitlines()[1] == "/app"  # the image's WORKDIR, in its container
        system = next(m["content"] for m in solved.messages if m["role"] == "system")
        assert (line in system) == (k == 1)  # round 1 ran the edited harness
    test = _rollouts(layout.test_rollouts)
    assert sorted(t.task_id for t in test) == sorted(TEST)
    assert all(_harbor_trial(t) and t.metadata["reward"] == 0.0 for t in test)
    assert state.test.snapshot_id == seed.snapshot_id
    # Our folders went in by `docker compose cp` into folders made first: Harbor's fallback
    # (a tar of each whole folder in memory, piped in) was never needed.
    assert not [r for r in caplog.records if "retrying upload with tar" in r.getMessage()]
