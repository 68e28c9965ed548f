"""The Agent base class and the two roles: config ownership, freezing, RunConfig, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.agents import (
    Agent,
    AgentConfigError,
    UnknownAdapterError,
    WorkerConfigError,
    target_agent,
    worker_agent,
)
from flashrsi_dagster.config import RoleConfig, load_config
from flashrsi_dagster.records import Status, Trajectory


class EchoAgent(Agent):
    """Answers with its model name and the instruction; optionally misbehaves."""

    name = "echo"
    description = "test adapter"
    has_file_tools = True
    seen: list[str]

    def _run(self, working_dir: Path, instruction: str) -> Trajectory:
        if instruction == "boom":
            raise RuntimeError("adapter crashed")
        model = self.run_config.llm.model
        self.config.llm.model = "changed-during-run"  # must not leak into this run
        assert self.run_config.llm.model == model
        return Trajectory(
            task_id="",
            snapshot_id="",
            status=Status.SUCCESS,
            answer=f"{model}:{instruction}:{self.files_dir.name}",
            messages=[{"role": "assistant", "content": "done"}],
        )


ECHO = f"{__name__}:EchoAgent"


def _role(**fields) -> RoleConfig:
    return RoleConfig.model_validate({"type": ECHO, "llm": {"model": "m1"}, **fields})


def test_constructors_refuse_a_whole_experiment_config(config_dir):
    config = load_config(config_dir / "exp.yaml")

    with pytest.raises(AgentConfigError, match=r"config\.agent .* not the whole experiment"):
        target_agent(config)
    with pytest.raises(AgentConfigError, match="not the whole experiment config"):
        worker_agent(config)
    with pytest.raises(AgentConfigError, match="not the whole experiment config"):
        EchoAgent(config, Path("."))


def test_a_plain_llm_worker_is_refused_at_start_up():
    worker = RoleConfig.model_validate({"type": "llm", "llm": {"model": "m"}})

    with pytest.raises(WorkerConfigError, match=r"worker\.type 'llm' .* has no file tools"):
        worker_agent(worker)


def test_unknown_adapter_types_are_named():
    with pytest.raises(UnknownAdapterError, match="unknown agent type 'nope'"):
        target_agent(_role(type="nope"), Path("."))
    with pytest.raises(UnknownAdapterError, match="cannot import agent type"):
        target_agent(_role(type="no.such.module:Agent"), Path("."))
    with pytest.raises(UnknownAdapterError, match="not an Agent subclass"):
        target_agent(_role(type="pathlib:Path"), Path("."))


def test_external_adapter_by_import_path_runs_with_run_config_first(tmp_path):
    agent = target_agent(_role(), tmp_path / "snap-a")
    agent.update(tmp_path / "snap-a", "a" * 40)

    trajectory = agent.run(tmp_path, "hello", task_id="t1", split="dev")

    assert trajectory.answer == "m1:hello:snap-a"
    assert (trajectory.task_id, trajectory.split, trajectory.snapshot_id) == ("t1", "dev", "a" * 40)
    header = trajectory.messages[0]
    assert header["role"] == "run_config"
    assert header["content"]["snapshot_id"] == "a" * 40
    assert header["content"]["config"]["llm"]["model"] == "m1"
    assert header["content"]["agent_role"] == "target"
    assert trajectory.messages[1] == {"role": "assistant", "content": "done"}


def test_config_is_copied_at_construction_and_frozen_per_run(tmp_path):
    role = _role()
    agent = target_agent(role, tmp_path)
    role.llm.model = "edited-by-caller"

    first = agent.run(tmp_path, "x", task_id="t")
    second = agent.run(tmp_path, "x", task_id="t")

    assert first.answer.startswith("m1:")  # the caller's later edit did not reach the agent
    assert second.answer.startswith("changed-during-run:")  # the run's own edit: next run only


def test_a_batch_shares_one_frozen_config(tmp_path):
    agent = target_agent(_role(), tmp_path)

    with agent.frozen():
        answers = [agent.run(tmp_path, "x", task_id=f"t{i}").answer for i in range(3)]

    assert answers == ["m1:x:" + tmp_path.name] * 3


def test_update_changes_files_never_the_model(tmp_path):
    agent = target_agent(_role(), tmp_path / "a")

    agent.update(tmp_path / "b", "b" * 40)

    assert agent.files_dir == tmp_path / "b"
    assert agent.config.llm.model == "m1"


def test_an_adapter_exception_becomes_an_error_trajectory(tmp_path):
    agent = target_agent(_role(), tmp_path)

    trajectory = agent.run(tmp_path, "boom", task_id="t9", split="dev")

    assert trajectory.status == Status.ERROR
    assert trajectory.error.type == "RuntimeError"
    assert "adapter crashed" in trajectory.error.message
    assert trajectory.messages[0]["role"] == "run_config"
    assert trajectory.task_id == "t9"


def test_run_config_holds_references_never_secret_values(tmp_path, canary):
    agent = target_agent(
        _role(llm={"model": "m1", "api_key": "${FLASHRSI_TEST_CANARY_API_KEY}"}), tmp_path
    )

    trajectory = agent.run(tmp_path, "x", task_id="t")

    assert canary not in trajectory.model_dump_json()
    assert trajectory.messages[0]["content"]["config"]["llm"]["api_key"] == (
        "${FLASHRSI_TEST_CANARY_API_KEY}"
    )


def test_only_an_agent_with_file_tools_is_asked_for_a_directory_edit(tmp_path):
    from flashrsi_dagster.agents.base import AgentConfigError
    from flashrsi_dagster.agents.plain_llm.adapter import PlainLLM
    from flashrsi_dagster.config.models import RoleConfig

    config = RoleConfig.model_validate({"type": "llm", "llm": {"model": "simulator/echo"}})
    judge = PlainLLM(config, tmp_path, role="reviewer")
    with pytest.raises(AgentConfigError, match="no file tools to edit with"):
        judge.edit(tmp_path, "rewrite everything", task_id="edit")
