"""Terminal-Bench through our engine: Harbor's agents and ours, the local environment."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.benchmarks.base import BenchmarkError
from flashrsi_dagster.benchmarks.harbor.benchmark import TerminalBench, _trajectory
from flashrsi_dagster.benchmarks.harbor.suite import TASKS_DIR, run_trial
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import RecordStore, Redactor, Status
from flashrsi_dagster.rollouts.engine import Settings, run_rollouts
from flashrsi_dagster.rollouts.record import RolloutRecord
from tests.environments.local_chroot.conftest import HOST_FROM, TASK_TOML, write_task

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the local environment needs root")

FLASHRSI = str(Path(sys.executable).parent / "flashrsi")
QUICK_VERIFIER = TASK_TOML.replace("[verifier]\ntimeout_sec = 30.0", "[verifier]\ntimeout_sec = 2")
SOLUTION = (TASKS_DIR / "fix-permissions" / "solution" / "solve.sh").read_text()


def _store(tmp_path: Path) -> RecordStore:
    return RecordStore(tmp_path, Redactor())


def _miniagent(server, script: str) -> RoleConfig:
    return RoleConfig.model_validate(
        {
            "type": "miniagent",
            "llm": {
                "model": f"simulator/script:{script}",
                "base_url": server.url,
                "max_retries": 0,
            },
        }
    )


def _shell(command: str) -> dict:
    return {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


def test_miniagent_solves_a_builtin_task_running_inside_the_environment(tmp_path):
    bench = TerminalBench()
    task = next(t for t in bench.tasks() if t.id == "fix-permissions")
    with OfflineModelServer(ServerConfig()) as server:
        server.add_script(
            "solve",
            [
                _shell("pwd; ls /app/bin; ls -A /tests 2>/dev/null | wc -l"),
                _shell(SOLUTION),
                {"text": "permissions fixed"},
            ],
        )
        with target_agent(_miniagent(server, "solve"), HARNESS) as agent:
            final = run_rollouts(
                bench,
                agent,
                [task],
                RolloutRecord(tmp_path / "r.jsonl", _store(tmp_path)),
                split="dev",
            )

    trajectory = final[0]
    assert (trajectory.status, trajectory.score) == (Status.SUCCESS, 1.0), trajectory.error
    first_output = next(m["content"] for m in trajectory.messages if m["role"] == "tool")
    # Inside the task's root: its files are there, the verifier's tests are not.
    assert first_output.split("\n")[1:] == ["/app", "README", "start.sh", "stop.sh", "0", ""]
    assert trajectory.usage.tool_calls == 2
    assert trajectory.metadata["inside_exit_code"] == 0  # the agent itself ran in there


def _kill_environments_running(marker: str, stop: threading.Event) -> None:
    """From the host, SIGKILL the init of every task environment in which a command line
    containing `marker` runs: the environment dies under the agent."""
    while not stop.is_set():
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                line = cmdline.read_bytes().replace(b"\0", b" ")
                if marker.encode() not in line:
                    continue
                status = (cmdline.parent / "status").read_text()
            except OSError:
                continue
            init = _namespace_init(int(cmdline.parent.name), status)
            if init is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(init, signal.SIGKILL)
        time.sleep(0.05)


def _namespace_init(pid: int, status: str) -> int | None:
    """The host pid of the process that is pid 1 in `pid`'s PID namespace (None: `pid` runs
    in the host's namespace)."""
    if len(status.split("NSpid:")[1].splitlines()[0].split()) < 2:
        return None
    namespace = os.readlink(f"/proc/{pid}/ns/pid")
    for other in Path("/proc").glob("[0-9]*"):
        try:
            if os.readlink(other / "ns" / "pid") != namespace:
                continue
            nspid = (other / "status").read_text().split("NSpid:")[1].splitlines()[0].split()
        except OSError:
            continue
        if nspid[-1] == "1":
            return int(other.name)
    return None


def test_an_environment_that_dies_is_rerun_twice_then_scores_zero(tmp_path):
    bench = TerminalBench()
    task = next(t for t in bench.tasks() if t.id == "fix-permissions")
    stop = threading.Event()
    # The sleep only has to outlast the killer's scan of /proc, which a loaded machine slows.
    killer = threading.Thread(target=_kill_environments_running, args=("sleep 97.31", stop))
    killer.start()
    try:
        with OfflineModelServer(ServerConfig()) as server:
            # The agent runs inside the environment and dies with it: one reply per attempt.
            server.add_script("dies", [_shell("sleep 97.31")] * 3 + [{"text": "done"}])
            with target_agent(_miniagent(server, "dies"), HARNESS) as agent:
                final = run_rollouts(
                    bench,
                    agent,
                    [task],
                    RolloutRecord(tmp_path / "r.jsonl", _store(tmp_path)),
                    split="dev",
                    settings=Settings(concurrency=1),
                )
    finally:
        stop.set()
        killer.join()

    assert (final[0].status, final[0].score, final[0].metadata["rerun"]) == (
        Status.INFRA_ERROR,
        0.0,
        2,
    )
    assert len(RolloutRecord(tmp_path / "r.jsonl").load()) == 3


@pytest.mark.parametrize(
    ("task", "cause", "said"),
    [
        ({"dockerfile": f"{HOST_FROM}\nRUN echo broken >&2; exit 7\n"}, "BuildError", "broken"),
        ({"test_sh": "#!/bin/bash\necho tests died\nexit 2\n"}, "RewardFileNotFoundError", "died"),
        (
            {"test_sh": "#!/bin/bash\npip install pytest\n"},
            "RewardFileNotFoundError",
            "pip cannot install into the host's Python",
        ),
        (
            {"test_sh": "#!/bin/bash\nsleep 60\n", "task_toml": QUICK_VERIFIER},
            "VerifierTimeoutError",
            "timed out",
        ),
    ],
    ids=["build-error", "no-reward-file", "pip-in-tests", "verifier-timeout"],
)
def test_a_failure_no_rerun_can_fix_is_recorded_with_its_cause_not_rerun(
    tmp_path, task, cause, said
):
    folder = write_task(tmp_path / "suite" / "broken", **task)
    bench = TerminalBench(folder.parent)
    with target_agent(RoleConfig.model_validate({"type": "harbor-oracle"})) as agent:
        final = run_rollouts(
            bench,
            agent,
            bench.tasks(),
            RolloutRecord(tmp_path / "r.jsonl", _store(tmp_path)),
            split="dev",
            settings=Settings(concurrency=1),
        )

    assert (final[0].status, final[0].score, final[0].error.type) == (Status.FAILURE, 0.0, cause)
    assert said in final[0].error.message
    assert len(RolloutRecord(tmp_path / "r.jsonl").load()) == 1


def test_harbors_agents_durations_are_their_run_as_for_ours(tmp_path):
    task_dir = write_task(tmp_path / "suite" / "t", dockerfile=f"{HOST_FROM}\nRUN sleep 1\n")
    (task,) = TerminalBench(task_dir.parent).tasks()
    result = asyncio.run(run_trial(task_dir, trials_dir=tmp_path / "trials", agent="nop"))
    with target_agent(RoleConfig.model_validate({"type": "harbor-nop"})) as agent:
        trajectory = _trajectory(task, "dev", 0, agent, result, None)

    run = result.agent_execution
    assert trajectory.started == run.started_at
    assert trajectory.duration == (run.finished_at - run.started_at).total_seconds()
    # generous bound: the agent's run is a part of the trial, at any load
    assert trajectory.duration < (result.finished_at - result.started_at).total_seconds()


def test_eval_checks_an_unseen_task_folder_with_harbors_oracle_and_nop(tmp_path):
    tasks = tmp_path / "my-suite"
    for source in sorted(TASKS_DIR.iterdir())[:3]:
        shutil.copytree(source, tasks / f"copy-of-{source.name}")
    config = tmp_path / "tb.yaml"
    config.write_text(
        "experiment: {name: suite-check}\n"
        "agent: {type: harbor-oracle}\n"
        "algorithm: {name: meta_harness, worker: {llm: {model: simulator/worker}}}\n"
        f"benchmark: {{name: terminal_bench, tasks_dir: {tasks}, concurrency: 3,\n"
        "  split_counts: {train: 0, dev: 3, test: 0}}\n"
    )
    base = [
        FLASHRSI,
        "eval",
        "--config",
        str(config),
        "--split",
        "dev",
        "--experiment.home",
        str(tmp_path / "home"),
    ]

    oracle = subprocess.run(base, capture_output=True, text=True, timeout=300)
    nop = subprocess.run(
        [*base, "--agent.type", "harbor-nop"], capture_output=True, text=True, timeout=300
    )

    assert oracle.returncode == 0, oracle.stderr
    assert "score 1.000 over 3 tasks" in oracle.stdout
    assert nop.returncode == 0, nop.stderr
    assert "score 0.000 over 3 tasks" in nop.stdout


def test_a_malformed_task_toml_is_named(tmp_path):
    shutil.copytree(TASKS_DIR / "fix-permissions", tmp_path / "broken")
    (tmp_path / "broken" / "task.toml").write_text("[agent\ntimeout_sec = 1\n")

    with pytest.raises(BenchmarkError, match=r"broken/task.toml: invalid TOML"):
        TerminalBench(tmp_path).tasks()
    with pytest.raises(BenchmarkError, match="no Harbor task folders"):
        TerminalBench(tmp_path / "broken" / "tests").tasks()


def test_the_task_id_is_task_tomls_name_where_it_has_one(tmp_path):
    named = TASK_TOML.replace("[agent]", '[task]\nname = "acme/parse-the-logs"\n\n[agent]')
    write_task(tmp_path / "suite" / "folder-name", task_toml=named)
    write_task(tmp_path / "suite" / "unnamed")

    assert [t.id for t in TerminalBench(tmp_path / "suite").tasks()] == [
        "parse-the-logs",
        "unnamed",
    ]


def test_validate_refuses_a_from_the_host_cannot_honour_before_any_run(tmp_path):
    suite = tmp_path / "suite"
    shutil.copytree(TASKS_DIR / "fix-permissions", suite / "fine")
    write_task(suite / "third-party", dockerfile="FROM python:3.12-slim\nWORKDIR /app\n")
    config = tmp_path / "tb.yaml"
    config.write_text(
        "experiment: {name: suite-check}\n"
        "agent: {type: harbor-oracle}\n"
        "algorithm: {name: meta_harness, worker: {llm: {model: simulator/worker}}}\n"
        f"benchmark: {{name: terminal_bench, tasks_dir: {suite},\n"
        "  split_counts: {train: 0, dev: 2, test: 0}}\n"
    )
    home = ["--experiment.home", str(tmp_path / "home")]

    validate = subprocess.run(
        [FLASHRSI, "validate", "--config", str(config), *home], capture_output=True, text=True
    )

    assert validate.returncode != 0
    assert (
        f"task third-party: {suite}/third-party/environment/Dockerfile:1: FROM python:3.12-slim "
        "cannot be honoured by the local environment"
    ) in validate.stderr
    assert "benchmark.harbor_environment: docker" in validate.stderr
    assert not (tmp_path / "home").exists()


def test_eval_runs_a_whole_suite_and_that_folder_never_becomes_an_experiment(tmp_path):
    tasks = tmp_path / "suite"
    for source in sorted(TASKS_DIR.iterdir())[:3]:
        shutil.copytree(source, tasks / source.name)
    config = tmp_path / "tb.yaml"
    # Default split counts would seal tasks: `--split all` draws no split at all.
    config.write_text(
        "experiment: {name: suite-check}\n"
        "agent: {type: harbor-oracle}\n"
        "algorithm: {name: meta_harness, worker: {llm: {model: simulator/worker}}}\n"
        f"benchmark: {{name: terminal_bench, tasks_dir: {tasks}, concurrency: 3}}\n"
    )
    args = ["--config", str(config), "--experiment.home", str(tmp_path / "home")]

    oracle = subprocess.run(
        [FLASHRSI, "eval", *args, "--split", "all"], capture_output=True, text=True, timeout=300
    )
    init = subprocess.run([FLASHRSI, "init", *args], capture_output=True, text=True, timeout=120)

    assert oracle.returncode == 0, oracle.stderr
    assert "score 1.000 over 3 tasks" in oracle.stdout
    assert init.returncode != 0
    assert "`flashrsi eval --split all` ran every task there" in init.stderr
