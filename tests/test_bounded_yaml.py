"""YAML from users and agents: aliases that expand too far are refused with the file named,
wherever the project reads a YAML it did not write itself."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from flashrsi_dagster.bounded_yaml import (
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    MAX_NODES,
    AliasBombError,
    NestingError,
    safe_load,
)
from flashrsi_dagster.config import ConfigError
from flashrsi_dagster.deployment.execution import executor_config
from flashrsi_dagster.offline_model.policies.script import ScriptError, load_script
from flashrsi_dagster.snapshots.components import Components, ComponentsError
from flashrsi_dagster.snapshots.protection import protected_changes
from tests.conftest import anchor_bomb

BOMB = f"bomb: {anchor_bomb(9)}\n"
"""Nine levels of nine aliases: 9**9 items once expanded, in under 400 bytes."""


def test_an_anchor_bomb_is_refused_at_its_line():
    with pytest.raises(AliasBombError, match="anchor bomb") as refused:
        safe_load("ok: 1\n" + BOMB)

    assert refused.value.problem_mark.line == 1


def test_an_alias_of_its_own_anchor_is_refused():
    with pytest.raises(AliasBombError, match="refers to its own anchor"):
        safe_load("a: &loop [1, *loop]\n")


def test_a_few_anchors_still_load():
    text = (
        "defaults: &llm {model: simulator/target, base_url: offline}\n"
        "agent: {llm: *llm}\n"
        "worker: {llm: {<<: *llm, model: simulator/worker}}\n"
        f"table: &row [{', '.join(['x'] * 100)}]\n"
        f"copies: [{', '.join(['*row'] * (MAX_ALIAS_NODES // 202))}]\n"
    )

    data = safe_load(text)

    assert data["agent"]["llm"] == {"model": "simulator/target", "base_url": "offline"}
    assert data["worker"]["llm"]["model"] == "simulator/worker"
    assert len(data["copies"]) == MAX_ALIAS_NODES // 202


def test_a_document_without_aliases_is_not_bounded_by_them():
    row = "- {text: row, tool_calls: [{name: t, arguments: {}}]}\n"
    rows = safe_load(row * 1_300)  # 8 nodes a row: more than the aliases' bound

    assert len(rows) == 1_300 and 8 * len(rows) > MAX_ALIAS_NODES


@dataclass
class _Change:
    status: str
    path: str


def test_every_yaml_a_user_or_an_agent_writes_is_bounded(tmp_path):
    """A harness's components.yaml, a scripted simulator's replies, a home's execution.yaml
    and a candidate's protected YAML (a Worker's edit): each refused naming its file."""
    (tmp_path / "components.yaml").write_text(BOMB)
    (tmp_path / "script.yaml").write_text(BOMB)
    (tmp_path / "execution.yaml").write_text(BOMB)

    with pytest.raises(ComponentsError, match=f"{tmp_path}/components.yaml: .*anchor bomb"):
        Components.from_file(tmp_path / "components.yaml")
    with pytest.raises(ScriptError, match=f"{tmp_path}/script.yaml: .*anchor bomb"):
        load_script(tmp_path / "script.yaml")
    with pytest.raises(ConfigError, match="anchor bomb") as home:
        executor_config(tmp_path)
    assert str(tmp_path / "execution.yaml") in str(home.value)
    [refusal] = protected_changes(
        ["agent.yaml#limits"],
        [_Change("M", "agent.yaml")],
        lambda _: b"limits: {shell_timeout: 60}\n",
        lambda _: f"limits: {{shell_timeout: 60}}\n{BOMB}".encode(),
    )
    assert "cannot be read as YAML" in refusal.reason


DEEP = "bomb: " + "[" * 100_000 + "]" * 100_000 + "\n"
"""A hundred thousand nested lists, no alias: a `RecursionError` in PyYAML's composer."""


@pytest.mark.parametrize(
    "text",
    [
        DEEP,
        "a: " + "{a: " * 5_000 + "1" + "}" * 5_000,
        "".join(" " * i + "-\n" for i in range(2_000)),
    ],
)
def test_a_document_nested_too_deep_is_refused_as_invalid_yaml(text: str):
    with pytest.raises(NestingError, match=f"nested more than {MAX_DEPTH} deep"):
        safe_load(text)


def test_a_config_nested_too_deep_is_refused_naming_its_file(tmp_path):
    """And a Worker's edit of a protected YAML is refused, not a crash of the host's check."""
    (tmp_path / "components.yaml").write_text(DEEP)

    with pytest.raises(ComponentsError, match=f"{tmp_path}/components.yaml: .*nested more"):
        Components.from_file(tmp_path / "components.yaml")
    [refusal] = protected_changes(
        ["agent.yaml#limits"],
        [_Change("M", "agent.yaml")],
        lambda _: b"limits: {shell_timeout: 60}\n",
        lambda _: f"limits: {{shell_timeout: 60}}\n{DEEP}".encode(),
    )
    assert "cannot be read as YAML" in refusal.reason
    nested = "a: " + "[" * (MAX_DEPTH - 2) + "1" + "]" * (MAX_DEPTH - 2) + "\n"  # 100 nodes deep
    assert safe_load(nested)["a"]  # up to the bound, a document loads


def test_a_document_of_too_many_values_is_refused_before_it_is_read_whole():
    """A Worker's protected YAML of a million `1,`s: parsed, it held the host for minutes."""
    huge = "limits: {shell_timeout: 60}\nx: [" + "1," * 1_000_000 + "1]\n"

    with pytest.raises(NestingError, match=f"more than {MAX_NODES} values") as refused:
        safe_load(huge)

    assert refused.value.problem_mark.line == 1
