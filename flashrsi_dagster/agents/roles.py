"""The two roles: `target_agent(config.agent)` runs tasks, `worker_agent(config.algorithm.worker)`
edits harnesses. Both look the adapter up by the role's `type`."""

from __future__ import annotations

from pathlib import Path

from flashrsi_dagster.agents.base import Agent, AgentConfigError
from flashrsi_dagster.agents.registry import adapter_class
from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.environments.confinement import Confinement
from flashrsi_dagster.snapshots.components import COMPONENTS_FILE, Components


class WorkerConfigError(AgentConfigError):
    """The Worker role names an agent that cannot edit files."""


def target_agent(
    config: RoleConfig, files_dir: Path | None = None, *, confinement: Confinement | None = None
) -> Agent:
    return _build(config, files_dir, role="target", confinement=confinement)


def worker_agent(
    config: RoleConfig, files_dir: Path | None = None, *, confinement: Confinement | None = None
) -> Agent:
    _refuse_experiment(config)
    cls = adapter_class(config.type)
    if not cls.has_file_tools:
        raise WorkerConfigError(
            f"algorithm.worker.type {config.type!r} ({cls.__name__}) has no file tools; the "
            "Worker must be an agent that can list, read and edit files (e.g. `miniagent` or "
            "`claude-code`), not a plain LLM"
        )
    if not config.permissions.edit:
        raise WorkerConfigError(
            "algorithm.worker.permissions.edit: false: the Worker's job is to edit harness "
            "files, and a Worker that may not edit could only fail; remove it or set it to true"
        )
    return _build(config, files_dir, role="worker", confinement=confinement)


def reviewer_agent(
    config: RoleConfig, files_dir: Path | None = None, *, confinement: Confinement | None = None
) -> Agent:
    """A role that judges (a diff review): any adapter, file tools or not."""
    return _build(config, files_dir, role="reviewer", confinement=confinement)


def harness_dir(config: RoleConfig) -> Path:
    """The harness a role starts from: its `source_dir`, else its adapter's built-in one."""
    return config.source_dir or adapter_class(config.type).builtin_harness()


def harness_components(config: RoleConfig, folder: Path | None = None) -> Components:
    """The components a role's seed snapshot is captured with: its harness's (or `folder`'s,
    another harness the same adapter runs) `components.yaml`, protecting the adapter's
    entries unless the file names its own."""
    declared = Components.from_file((folder or harness_dir(config)) / COMPONENTS_FILE)
    return declared.with_protection(adapter_class(config.type).protected)


def _build(
    config: RoleConfig, files_dir: Path | None, *, role: str, confinement: Confinement | None
) -> Agent:
    _refuse_experiment(config)
    cls = adapter_class(config.type)
    return cls(config, files_dir or harness_dir(config), role=role, confinement=confinement)


def _refuse_experiment(config: object) -> None:
    if isinstance(config, ExperimentConfig):
        raise AgentConfigError(
            "pass one role's config — config.agent (target) or config.algorithm.worker "
            "(Worker) — not the whole experiment config"
        )
