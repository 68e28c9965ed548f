"""Harbor's real Trial and Job, with the local environment, on the built-in suite and on
tasks made to fail: forged rewards, Dockerfile lines it cannot honour, broken task.toml."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from harbor.models.trial.config import AgentConfig, EnvironmentConfig
from harbor.models.trial.result import TrialResult

from flashrsi_dagster.benchmarks.harbor.scripted_agent import SCRIPTED_AGENT_IMPORT_PATH
from flashrsi_dagster.benchmarks.harbor.suite import (
    TaskDefinitionError,
    builtin_task_dirs,
    reward,
    run_job,
    run_trial,
    time_builtin_suite,
)
from flashrsi_dagster.environments.local_chroot.dockerfile import DockerfileError
from flashrsi_dagster.environments.local_chroot.environment import LocalChrootEnvironment
from tests.environments.local_chroot.conftest import (
    HOST_FROM,
    TASK_TOML,
    needs_local_env,
    write_task,
)

pytestmark = [
    needs_local_env,
    # Raised by Harbor 0.25's own Trial code on every trial, not by ours.
    pytest.mark.filterwarnings("ignore:Task.checksum will be deprecated:DeprecationWarning"),
]

TASKS = builtin_task_dirs()
AGENTS = ("oracle", "nop")


@pytest.fixture(scope="module")
def suite_results(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], TrialResult]:
    """Every built-in task with the oracle and the nop agent, all trials at once."""
    trials_dir = tmp_path_factory.mktemp("trials")

    async def run_all():
        runs = [(task, agent) for task in TASKS for agent in AGENTS]
        results = await asyncio.gather(
            *(run_trial(task, trials_dir=trials_dir, agent=agent) for task, agent in runs)
        )
        return {
            (task.name, agent): result for (task, agent), result in zip(runs, results, strict=True)
        }

    return asyncio.run(run_all())


def test_the_suite_has_at_least_ten_tasks():
    assert len(TASKS) >= 10


@pytest.mark.parametrize("task", [task.name for task in TASKS])
def test_the_oracle_solves_every_task_and_nop_solves_none(suite_results, task: str):
    oracle, nop = suite_results[task, "oracle"], suite_results[task, "nop"]

    assert (reward(oracle), oracle.exception_info) == (1.0, None)
    assert (reward(nop), nop.exception_info) == (0.0, None)


FAILING_TEST = """\
#!/bin/bash
if [ "$(cat /app/answer.txt 2>/dev/null)" = 42 ]; then r=1; else r=0; fi
echo "$r" > /logs/verifier/reward.txt
"""
FORGERY = [
    "echo 1 > /logs/verifier/reward.txt",
    "echo '{\"reward\": 1}' > /logs/verifier/reward.json",
    # A writer left running through the verifier's turn, and a test planted beside the real one.
    'nohup sh -c \'while :; do echo {\\"reward\\": 1} > /tmp/r'
    " && mv /tmp/r /logs/verifier/reward.json; sleep 0.01; done' >/dev/null 2>&1 &",
    "mkdir -p /tests && printf '#!/bin/bash\\necho 1 > /logs/verifier/reward.txt\\n'"
    " > /tests/test.sh && chmod +x /tests/test.sh",
]


@pytest.mark.parametrize(
    ("commands", "expected"),
    [(FORGERY, 0.0), ([*FORGERY, "echo 42 > /app/answer.txt"], 1.0)],
    ids=["forged-only", "forged-and-solved"],
)
def test_a_reward_the_agent_writes_never_counts(tmp_path: Path, commands, expected):
    task = write_task(tmp_path / "task", test_sh=FAILING_TEST)
    agent = AgentConfig(import_path=SCRIPTED_AGENT_IMPORT_PATH, kwargs={"commands": commands})

    result = asyncio.run(run_trial(task, trials_dir=tmp_path / "trials", agent=agent))

    assert result.agent_result.metadata == {"exit_codes": [0, 0, 0, 0, *([0] * (expected > 0))]}
    assert (reward(result), result.exception_info) == (expected, None)
    (trial_dir,) = (tmp_path / "trials").iterdir()
    assert sorted(p.name for p in (trial_dir / "verifier").iterdir()) == [
        "reward.txt",
        "test-stdout.txt",
    ]


@pytest.mark.parametrize(
    ("writes", "expected"),
    [
        ('echo 1 > "$V/reward.txt"', 1.0),
        ("""echo '{"score": 1.0, "tests_passed": 3}' > $V/reward.json""", 1.0),
        ("""echo '{"accuracy": 0.25}' > $V/reward.json""", 0.25),
        ("""echo '{"reward": 0, "score": 1}' > $V/reward.json""", 0.0),
        ("""echo 1 > "$V/reward.txt"; echo '{"score": 0.5}' > $V/reward.json""", 0.5),
    ],
    ids=["text", "json-any-key", "json-one-key", "json-reward-key", "json-before-text"],
)
def test_rewards_are_read_as_harbor_reads_them(tmp_path: Path, writes: str, expected: float):
    task = write_task(tmp_path / "task", test_sh=f"#!/bin/bash\nV=/logs/verifier\n{writes}\n")

    result = asyncio.run(run_trial(task, trials_dir=tmp_path / "trials", agent="nop"))

    assert (reward(result), result.exception_info) == (expected, None)


PGREP_TEST = """#!/bin/bash
if pgrep -f 'python3 -m http.server 8731' >/dev/null && curl -sf localhost:8731/ >/dev/null; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def test_the_verifier_sees_a_service_the_agent_started(tmp_path: Path):
    task = write_task(tmp_path / "task", test_sh=PGREP_TEST)
    start = (
        "cd /tmp && (nohup python3 -m http.server 8731 >/dev/null 2>&1 &);"
        " for i in $(seq 300); do curl -sf localhost:8731/ >/dev/null && break; sleep 0.1; done"
    )
    agent = AgentConfig(import_path=SCRIPTED_AGENT_IMPORT_PATH, kwargs={"commands": [start]})

    solved = asyncio.run(run_trial(task, trials_dir=tmp_path / "trials", agent=agent))
    nop = asyncio.run(run_trial(task, trials_dir=tmp_path / "nop", agent="nop"))

    assert (reward(solved), solved.exception_info) == (1.0, None)
    assert (reward(nop), nop.exception_info) == (0.0, None)


class WithoutVerificationRounds(LocalChrootEnvironment):
    """Control: the verifier runs in the agent's own container and folders, as Harbor's
    shared verifier does in any container environment."""

    def _maybe_begin_round(self, target: str) -> None:
        return None


def test_without_private_verifier_folders_the_forgery_would_count(tmp_path: Path):
    task = write_task(tmp_path / "task", test_sh=FAILING_TEST)
    agent = AgentConfig(import_path=SCRIPTED_AGENT_IMPORT_PATH, kwargs={"commands": FORGERY})
    control = EnvironmentConfig(import_path=f"{__name__}:WithoutVerificationRounds")

    result = asyncio.run(
        run_trial(task, trials_dir=tmp_path / "trials", agent=agent, environment=control)
    )

    assert reward(result) == 1.0  # the writer the agent left behind outlived the real test


def test_a_dockerfile_line_it_cannot_honour_fails_the_trial_naming_file_and_line(tmp_path: Path):
    task = write_task(tmp_path / "task", dockerfile=f"{HOST_FROM}\nWORKDIR /app\nUSER agent\n")

    result = asyncio.run(run_trial(task, trials_dir=tmp_path / "trials"))

    # The trial's own failure, recorded; in a Job the other trials carry on.
    assert result.exception_info.exception_type == DockerfileError.__name__
    assert result.exception_info.exception_message == (
        f"{task}/environment/Dockerfile:3: USER agent is not supported: every command runs as root"
    )
    assert (result.verifier_result, result.agent_execution) == (None, None)


def test_in_a_job_a_task_it_cannot_build_fails_alone(tmp_path: Path):
    good = write_task(
        tmp_path / "good", solve_sh="#!/bin/bash\necho 42 > /app/answer.txt\n", test_sh=FAILING_TEST
    )
    bad = write_task(tmp_path / "bad", dockerfile="FROM a\nFROM b\n")

    job = asyncio.run(run_job([good, bad], jobs_dir=tmp_path / "jobs"))

    results = {trial.task_name: trial for trial in job.trial_results}
    assert reward(results["good"]) == 1.0
    assert "Dockerfile:2: multi-stage builds" in results["bad"].exception_info.exception_message


@pytest.mark.parametrize(
    ("task_toml", "message"),
    [
        ("[agent\ntimeout_sec = 1\n", "invalid TOML"),
        (TASK_TOML.replace("timeout_sec = 60.0", 'timeout_sec = "soon"'), "invalid task config"),
        (TASK_TOML.replace('"no-network"', '"intranet"'), "invalid task config"),
    ],
    ids=["syntax", "type", "value"],
)
def test_a_malformed_task_toml_fails_naming_the_file(tmp_path: Path, task_toml: str, message: str):
    task = write_task(tmp_path / "task", task_toml=task_toml)

    with pytest.raises(TaskDefinitionError, match=f"^{task}/task.toml: {message}"):
        asyncio.run(run_trial(task, trials_dir=tmp_path / "trials"))


def test_the_benchmark_helper_runs_the_suite_through_harbor_s_job(tmp_path: Path):
    timing = asyncio.run(time_builtin_suite(tmp_path / "jobs", n_concurrent_trials=8))

    assert timing.rewards == {task.name: 1.0 for task in TASKS}
    assert timing.wall_sec > 0
