"""Agents inside Harbor task environments: MiniAgent and Claude Code solve built-in tasks
running inside the local environment, the task's environment variables reach the agent's
tools and nothing of the host's does, and a batch the agent cannot run inside is refused
before its first task."""

from __future__ import annotations

import os
import shlex
from pathlib import Path, PurePosixPath

import pytest

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.agents.base import ContainerUnsupported
from flashrsi_dagster.agents.miniagent.adapter import HARNESS, MiniAgent
from flashrsi_dagster.benchmarks.harbor.benchmark import TerminalBench
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.environments.local_chroot.environment import LocalChrootEnvironment
from flashrsi_dagster.integrations.harbor import HARBOR, bind
from flashrsi_dagster.integrations.staging import distributions_for, staged
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import RecordStore, Redactor, Status, Trajectory
from flashrsi_dagster.rollouts.engine import run_rollouts
from flashrsi_dagster.rollouts.record import RolloutRecord
from tests.agents.claude_code.conftest import call
from tests.conftest import CANARY_ENV
from tests.environments.local_chroot.conftest import (
    HOST_FROM,
    TASK_TOML,
    needs_local_env,
    write_task,
)
from tests.sabotage.helpers import editor, say, shell

pytestmark = pytest.mark.filterwarnings(
    "ignore:Task.checksum will be deprecated:DeprecationWarning"
)
HOST_ONLY = "FLASHRSI_TEST_HOST_ONLY_SETTING"
SETTINGS = "[app]\nenv = staging\nport = 80801\n"
"""What `env-settings-file` wants, from the APP_ENV and APP_PORT its image sets."""
EVERY_ENVIRONMENT = "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null"
"""The environment variables of every process in the task's environment."""


@pytest.fixture(scope="module")
def server():
    with OfflineModelServer(ServerConfig()) as running:
        yield running


class NoRunnerBinding(TerminalBench):
    """Terminal-Bench's tasks driven directly from Python: nothing binds the agent for us."""

    bind = None


def _role(server, script: str, **fields) -> RoleConfig:
    llm = {"model": f"simulator/script:{script}", "base_url": server.url, "max_retries": 0}
    return RoleConfig.model_validate({"llm": {**llm, **fields.pop("llm", {})}, **fields})


def _rollout(bench, agent, task_ids, tmp_path: Path) -> list[Trajectory]:
    tasks = [t for t in bench.tasks() if t.id in task_ids]
    record = RolloutRecord(tmp_path / "rollouts.jsonl", RecordStore(tmp_path, Redactor()))
    return run_rollouts(bench, agent, tasks, record, split="dev")


def _tool_outputs(trajectory: Trajectory) -> list[str]:
    return [m["content"] for m in trajectory.messages if m["role"] == "tool"]


def _tools_called(trajectory: Trajectory) -> list[str]:
    return [
        call["function"]["name"]
        for m in trajectory.messages
        if m["role"] == "assistant"
        for call in m.get("tool_calls") or []
    ]


@needs_local_env
def test_miniagent_bound_to_harbor_solves_a_task_inside_with_its_own_shell_and_editor(
    server, tmp_path, canary, monkeypatch
):
    monkeypatch.setenv(HOST_ONLY, "host-only-value-31c9")
    server.add_script(
        "mini-inside",
        [
            shell(f'echo "$APP_ENV:$APP_PORT"; ls -d /flashrsi/*; {EVERY_ENVIRONMENT}'),
            editor("create", "/app/settings.ini", file_text=SETTINGS),
            say("settings written"),
        ],
    )
    config = _role(server, "mini-inside", llm={"api_key": "${" + CANARY_ENV + "}"})
    with target_agent(config, HARNESS) as agent:
        assert bind(agent).environment_executor == HARBOR
        trajectory = _rollout(NoRunnerBinding(), agent, {"env-settings-file"}, tmp_path)[0]

    assert (trajectory.status, trajectory.score) == (Status.SUCCESS, 1.0), trajectory.metadata
    assert _tools_called(trajectory) == ["shell", "editor"]
    seen = _tool_outputs(trajectory)[0]
    # The image's variables, in the environment's root, with the framework passed in
    assert "staging:80801" in seen
    assert {"/flashrsi/site-packages", "/flashrsi/snapshot", "/flashrsi/src"} <= set(seen.split())
    # ... and nothing of the host's: neither the key nor any variable of the host's own.
    assert canary not in trajectory.model_dump_json()
    assert CANARY_ENV not in seen and HOST_ONLY not in seen
    assert trajectory.metadata["inside_exit_code"] == 0
    assert trajectory.usage.input_tokens > 0  # the gateway's count, taken on the host


@needs_local_env
def test_inside_a_task_environment_the_gateway_still_cuts_to_the_protected_output_limit(
    server, tmp_path
):
    """The harness's edited shell tool shows 10^9 characters; the token the host granted
    carries the snapshot's protected output limit, so the model reads no more."""
    from tests.agents.miniagent.test_protected_limits import edited_harness

    server.add_script("mini-huge", [shell("head -c 50000 /dev/zero | tr '\\0' y"), say("x")])
    with target_agent(_role(server, "mini-huge"), edited_harness(tmp_path)) as agent:
        bind(agent)
        trajectory = _rollout(NoRunnerBinding(), agent, {"env-settings-file"}, tmp_path)[0]

    calls = [r for r in server.requests if r.model == "simulator/script:mini-huge"]
    assert len(calls) == 2 and calls[1].input_tokens < 2_000, calls[1].input_tokens
    assert "y" * 100 in _tool_outputs(trajectory)[0]


TOOL = "ANSWER = 42\n"
SHADOW = "raise ImportError('the framework imported from the task PYTHONPATH')\n"


@needs_local_env
def test_the_task_pythonpath_serves_the_agents_tools_not_the_frameworks_imports(server, tmp_path):
    task = write_task(
        tmp_path / "suite" / "pythonpath-tool",
        dockerfile=(
            f"{HOST_FROM}\nENV PYTHONPATH=/opt/tasktools\nWORKDIR /app\n"
            "COPY tasktools/ /opt/tasktools/\n"
        ),
        files={
            "tasktools/tasktool.py": TOOL,
            # Modules the framework's entry and MiniAgent import, shadowed on the task's path.
            **{f"tasktools/{name}.py": SHADOW for name in ("json", "pydantic", "yaml", "openai")},
        },
        test_sh=(
            '#!/bin/bash\nif [ "$(cat /app/answer.txt)" = 42 ]; then r=1; else r=0; fi\n'
            'echo "$r" > /logs/verifier/reward.txt\n'
        ),
        # With network: the trial's namespace reaches out through NAT, never the host's
        # loopback, so the gateway still answers inside it.
        task_toml=TASK_TOML.replace('"no-network"', '"public"'),
    )
    server.add_script(
        "pythonpath",
        [
            shell("python3 -c 'import tasktool; print(tasktool.ANSWER)' > /app/answer.txt"),
            say(),
        ],
    )
    with target_agent(_role(server, "pythonpath"), HARNESS) as agent:
        trajectory = _rollout(TerminalBench(task.parent), agent, {task.name}, tmp_path)[0]

    assert (trajectory.status, trajectory.score) == (Status.SUCCESS, 1.0), trajectory.metadata
    assert agent.environment_executor == HARBOR  # the Terminal-Bench runner bound it


def test_a_batch_of_environment_tasks_is_refused_before_its_first_task_for_the_llm_adapter(
    server, tmp_path
):
    bench = TerminalBench()
    with (
        target_agent(_role(server, "never", type="llm")) as agent,
        pytest.raises(ContainerUnsupported) as refused,
    ):
        _rollout(bench, agent, {"env-settings-file", "fix-stats-script"}, tmp_path)

    message = str(refused.value)
    assert "agent type 'llm'" in message and "the 2 task(s)" in message
    assert "cannot run inside a task environment" in message
    assert not (tmp_path / "rollouts.jsonl").exists()


def test_an_unbound_agent_is_refused_where_no_runner_binds_one(server, tmp_path):
    with (
        target_agent(_role(server, "never"), HARNESS) as agent,
        pytest.raises(ContainerUnsupported, match="bound to no environment executor"),
    ):
        _rollout(NoRunnerBinding(), agent, {"fix-stats-script"}, tmp_path)
    assert not (tmp_path / "rollouts.jsonl").exists()


def test_what_goes_in_is_the_declared_distributions_at_the_host_versions_not_the_extras():
    ready = staged(distributions_for(MiniAgent))
    names = {pin.split("==")[0].lower() for pin in ready.distributions}

    assert {"openai", "pyyaml", "pydantic"} <= names
    assert not names & {"dagster", "harbor", "claude-agent-sdk", "litellm"}
    from importlib.metadata import version

    assert f"openai=={version('openai')}" in ready.distributions
    assert sorted(p.name for p in ready.source.iterdir()) == ["flashrsi_dagster"]
    framework = ready.source / "flashrsi_dagster"
    assert (framework / "integrations" / "container_entry.py").is_file()
    # The benchmark's tasks (their tests and reference solutions) never go in.
    assert not (framework / "benchmarks" / "harbor" / "tasks").exists()
    assert not [p for p in framework.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
    assert os.access(ready.python, os.X_OK) and ready.python.is_relative_to(ready.prefix)


@needs_local_env
def test_claude_code_solves_a_task_inside_with_the_bundled_cli(server, tmp_path, canary):
    pytest.importorskip("claude_agent_sdk")
    write = 'printf \'[app]\\nenv = %s\\nport = %s\\n\' "$APP_ENV" "$APP_PORT" > settings.ini'
    server.add_script("claude-inside", [call("Bash", command=write), say("written")])
    llm = {"api": "anthropic", "base_url": server.root_url, "api_key": "${" + CANARY_ENV + "}"}
    config = _role(server, "claude-inside", type="claude-code", llm=llm)
    with target_agent(config) as agent:
        trajectory = _rollout(TerminalBench(), agent, {"env-settings-file"}, tmp_path)[0]

    assert (trajectory.status, trajectory.score) == (Status.SUCCESS, 1.0), trajectory.metadata
    assert trajectory.metadata["inside_exit_code"] == 0
    assert canary not in trajectory.model_dump_json()


def test_claude_code_inside_needs_explicit_credentials(server):
    pytest.importorskip("claude_agent_sdk")
    llm = {"api": "anthropic", "base_url": server.root_url}
    with (
        target_agent(_role(server, "never", type="claude-code", llm=llm)) as agent,
        pytest.raises(ContainerUnsupported, match=r"agent\.llm\.api_key: .* explicit"),
    ):
        agent._check_container()


def test_claude_code_inside_refuses_a_native_login_the_host_holds(server):
    pytest.importorskip("claude_agent_sdk")
    llm = {"api": "anthropic", "base_url": server.root_url, "auth": "login"}
    with (
        target_agent(_role(server, "never", type="claude-code", llm=llm)) as agent,
        pytest.raises(ContainerUnsupported, match=r"agent\.llm\.auth: .* stays on the host"),
    ):
        agent._check_container()


class CopyingLocal(LocalChrootEnvironment):
    """The local environment without its read-only shares: what goes in is copied with
    Harbor's generic `upload_dir`, as for Docker and the other environments, and as Docker's
    `cp` copies, only into a folder that exists (Harbor's fallback would hide it: a tar of the
    whole folder held in memory and piped in, every trial)."""

    share_read_only = None

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        await self._into_a_folder(target_dir)
        await super().upload_dir(source_dir, target_dir)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        await self._into_a_folder(target_path)
        await super().upload_file(source_path, target_path)

    async def _into_a_folder(self, target: str) -> None:
        parent = PurePosixPath(target).parent
        if (await self.exec(f"test -d {shlex.quote(str(parent))}")).return_code != 0:
            raise RuntimeError(f"Could not find the file {parent} in container")


@pytest.mark.slow
@needs_local_env
def test_where_folders_cannot_be_shared_they_are_uploaded_and_the_agent_still_runs_inside(
    server, tmp_path
):
    server.add_script(
        "uploaded", [shell("touch /flashrsi/src/written; ls /flashrsi/src"), say("done")]
    )
    bench = TerminalBench(environment=f"{__name__}:CopyingLocal")
    with target_agent(_role(server, "uploaded"), HARNESS) as agent:
        trajectory = _rollout(bench, agent, {"env-settings-file"}, tmp_path)[0]

    assert trajectory.status == Status.FAILURE and trajectory.score == 0.0  # not solved, but ran
    assert trajectory.metadata["inside_exit_code"] == 0
    assert _tool_outputs(trajectory)[0].split()[-2:] == ["flashrsi_dagster", "written"]
