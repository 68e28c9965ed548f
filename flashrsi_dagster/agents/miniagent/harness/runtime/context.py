"""What every tool call receives: where to work, where the harness lives, and its limits."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path


class Cancelled(Exception):
    """The run was cancelled (ctx.cancel was set) while a tool was working."""


@dataclass(frozen=True)
class Skill:
    """A folder skill: `skills/<name>/SKILL.md`, advertised by its description, read on demand."""

    name: str
    description: str
    path: Path


@dataclass
class Context:
    working_dir: Path
    """The task's folder: cwd of shell commands; editor paths resolve against it."""
    files_dir: Path
    """The harness folder this run was loaded from (agent.yaml and skills/ live here)."""
    shell_timeout: float = 60.0
    """Upper bound, in seconds, for one shell command."""
    output_limit: int = 20_000
    """Maximum characters of tool output returned to the model."""
    cancel: threading.Event = field(default_factory=threading.Event)
    """Set from another thread to stop the running tool and the run."""
    skills: dict[str, Skill] = field(default_factory=dict)
    """Folder skills by name."""
    shell_prefix: list[str] | None = None
    """When the task has its own environment (a container), the argv that runs
    `bash -c <command>` inside it; None: bash on this machine in `working_dir`."""
    read_only: bool = False
    """The run may not change the working folder (`permissions.edit: false`): the editor
    only views (the jail mounts the folder read-only besides)."""
    web: dict[str, str] | None = None
    """With the web on: `base_url` (the gateway's, ending in /v1) and `token` for
    `/web/fetch`; None: no web."""

    def __post_init__(self) -> None:
        self.working_dir = Path(self.working_dir)
        self.files_dir = Path(self.files_dir)
