"""Harbor trials in Harbor's own docker environment (`harbor_environment: docker-offline`):
every task of both built-in suites built by Docker from its Dockerfile, on base images made here,
and scored by its verifier through Harbor's `Job`: the oracle solves each one, the agent that
does nothing solves none, and no trial's container gets a network."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from harbor.models.job.result import JobResult
from harbor.models.trial.config import EnvironmentConfig
from harbor.models.trial.result import ExceptionInfo, TrialResult

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.benchmarks.base import Task
from flashrsi_dagster.benchmarks.harbor.benchmark import TerminalBench, _docker_build_error
from flashrsi_dagster.benchmarks.harbor.suite import (
    DOCKER_TASKS_DIR,
    TASKS_DIR,
    builtin_task_dirs,
    reward,
    run_job,
    run_trial,
)
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.environments.harbor_docker import OFFLINE_DOCKER_IMPORT_PATH
from flashrsi_dagster.records import RecordStore, Redactor, Status
from flashrsi_dagster.rollouts.engine import Settings, run_rollouts
from flashrsi_dagster.rollouts.record import RolloutRecord
from tests.environments.local_chroot.conftest import write_task

pytestmark = pytest.mark.filterwarnings(
    "ignore:Task.checksum will be deprecated:DeprecationWarning"  # Harbor 0.25's own
)

DOCKER = EnvironmentConfig(import_path=OFFLINE_DOCKER_IMPORT_PATH)


AGENTS = ("oracle", "nop")


@pytest.fixture(scope="module")
def trials(harbor_docker, tmp_path_factory) -> Callable[[Path], dict[str, dict[str, TrialResult]]]:
    """`trials(suite)`: per agent (`AGENTS`), each task's trial over the whole suite, one Harbor
    job an agent, the jobs at once (a trial mostly waits on its container). Run once a suite
    for the module: the tests read the same trials in several ways."""
    done: dict[Path, dict[str, dict[str, TrialResult]]] = {}

    async def jobs(suite: Path) -> list[JobResult]:
        jobs_dir = tmp_path_factory.mktemp(suite.name)
        return await asyncio.gather(
            *(
                run_job(
                    builtin_task_dirs(suite),
                    jobs_dir=jobs_dir / agent,
                    agent=agent,
                    n_concurrent_trials=2,
                    environment=DOCKER,
                )
                for agent in AGENTS
            )
        )

    def of(suite: Path) -> dict[str, dict[str, TrialResult]]:
        if suite not in done:
            done[suite] = {
                agent: {trial.task_name: trial for trial in result.trial_results}
                for agent, result in zip(AGENTS, asyncio.run(jobs(suite)), strict=True)
            }
        return done[suite]

    return of


def _rewards(by_task: dict[str, TrialResult]) -> dict[str, dict[str, float] | None]:
    """Each task's verifier rewards (all keys)."""
    return {
        name: trial.verifier_result and trial.verifier_result.rewards
        for name, trial in by_task.items()
    }


def _networks() -> set[str]:
    listed = ["docker", "network", "ls", "--format", "{{.Driver}}"]
    return set(subprocess.run(listed, capture_output=True, text=True, check=True).stdout.split())


@pytest.mark.slow
@pytest.mark.parametrize("suite", [TASKS_DIR, DOCKER_TASKS_DIR], ids=["tasks", "docker_tasks"])
def test_the_oracle_solves_every_task_in_docker_and_the_nop_agent_none(suite, trials):
    names = {path.name for path in builtin_task_dirs(suite)}

    oracle, nop = (_rewards(trials(suite)[agent]) for agent in AGENTS)

    assert {name: r and r["reward"] for name, r in oracle.items()} == dict.fromkeys(names, 1)
    assert {name: r and r["reward"] for name, r in nop.items()} == dict.fromkeys(names, 0)
    assert _networks() <= {"host", "null"}  # no compose network was made: `none` for each


@pytest.mark.slow
def test_rewards_are_read_from_reward_json_with_its_other_keys_and_from_reward_txt(trials):
    # the oracle's trials of the Docker suite (the test above's)
    oracle = trials(DOCKER_TASKS_DIR)["oracle"]
    service, release = oracle["metrics-collector-service"], oracle["release-manifest"]

    # the verifier saw the agent's collector with pgrep, in the same container
    assert service.verifier_result.rewards == {
        "reward": 1, "running": 1, "pid_file": 1, "writing": 1
    }  # fmt: skip
    assert reward(release) == 1.0 and release.verifier_result.rewards == {"reward": 1}


def test_a_task_with_a_network_allowlist_is_refused_naming_what_it_needs(tmp_path):
    task = tmp_path / "allowlisted"
    shutil.copytree(DOCKER_TASKS_DIR / "release-manifest", task)
    toml = task / "task.toml"
    toml.write_text(
        toml.read_text().replace(
            'network_mode = "no-network"',
            'network_mode = "allowlist"\nallowed_hosts = ["pypi.org"]',
        )
    )

    refused = "'allowlist' needs Harbor's egress-control sidecar, whose image comes from a registry"
    with pytest.raises(ValueError, match=refused):  # before any build
        asyncio.run(run_trial(task, trials_dir=tmp_path, agent="nop", environment=DOCKER))


@pytest.mark.slow
def test_a_dockerfile_that_does_not_build_is_the_tasks_failure_with_its_log_not_rerun(
    tmp_path, harbor_docker
):
    """Harbor raises a bare RuntimeError for a failed `docker compose build`; it is recorded as
    the local environment records its own build errors: the task's, with the log's tail."""
    dockerfile = "FROM debian:bookworm-slim\nRUN echo the build broke >&2; exit 7\n"
    folder = write_task(tmp_path / "suite" / "unbuildable", dockerfile=dockerfile)
    bench = TerminalBench(folder.parent, environment="docker-offline")
    with target_agent(RoleConfig.model_validate({"type": "harbor-oracle"})) as agent:
        final = run_rollouts(
            bench,
            agent,
            bench.tasks(),
            RolloutRecord(tmp_path / "r.jsonl", RecordStore(tmp_path, Redactor())),
            split="dev",
            settings=Settings(concurrency=1),
        )

    assert (final[0].status, final[0].score, final[0].error.type) == (
        Status.FAILURE,
        0.0,
        "BuildError",
    )
    assert final[0].error.message.startswith("task unbuildable: its Docker image did not build")
    assert "the build broke" in final[0].error.message
    assert len(RolloutRecord(tmp_path / "r.jsonl").load()) == 1  # never rerun


def _compose_failed(command: str, log: str) -> ExceptionInfo:
    """The RuntimeError Harbor's docker environment raises for a failed compose command."""
    message = (
        "Docker compose command failed for environment t. Command: docker compose "
        f"--project-name t -f /x.yaml {command}. Return code: 1. Stdout: {log}. Stderr: None. "
    )
    return ExceptionInfo.from_exception(RuntimeError(message))


def test_only_a_failed_build_is_the_tasks_and_not_where_the_engine_did_not_answer():
    task = Task(id="t", instruction="Do the task.")
    unanswered = "Cannot connect to the Docker daemon at unix:///x.sock. Is it running?"

    built = _docker_build_error(task, _compose_failed("build", "x" * 5000 + " step 2 failed"))

    assert built.type == "BuildError" and built.message.endswith("step 2 failed")
    assert len(built.message) < 2200  # the log's tail, not all of it
    assert _docker_build_error(task, _compose_failed("build", unanswered)) is None
    assert _docker_build_error(task, _compose_failed("up --detach --wait", "died")) is None
