"""A harness's protected limits, read the host's way and held outside the harness.

`agent.yaml#limits` (MiniAgent) and `config.toml#limits` (the Codex core) are evaluator-protected:
no candidate may change them, so the snapshot being run holds the seed's values. The harness
applies them itself, but the harness is evolvable code (a `sed` of `tools/shell.py` once raised
its timeout to 10^6 s), so the framework reads them here, from the snapshot's protected key,
and enforces them again where no harness code runs:

- `shell_timeout`: the host's watchdog over the jail's processes (`environments/watchdog.py`)
  kills any command the agent started once it has run that long (plus a grace);
- `output_limit`: the model gateway cuts every tool result of the run's model calls to it
  (`gateway/clipping.py`).

The copy the harness applies is at most a stricter request (a shorter timeout, a smaller cut).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flashrsi_dagster.environments.confinement import AgentRun
from flashrsi_dagster.gateway.clipping import clip_tool_results
from flashrsi_dagster.records import Trajectory
from flashrsi_dagster.snapshots.protection import ABSENT, key_value

KEY = "limits"


@dataclass(frozen=True)
class ProtectedLimits:
    shell_timeout: float
    """Seconds one command the agent starts may run."""
    output_limit: int
    """Characters of one tool result the model may read."""

    @classmethod
    def read(cls, files_dir: Path, file: str, defaults: ProtectedLimits) -> ProtectedLimits:
        """The `limits` table of `file` (YAML, or TOML by its suffix) in the snapshot at
        `files_dir`, a missing value taking the harness's own default (`defaults`). ValueError
        (naming the file and key) when it cannot be read or a value is not a positive number."""
        path = Path(files_dir) / file
        where = f"{path}#{KEY}"
        data = path.read_bytes() if path.is_file() else None
        try:
            table = key_value(data, KEY, toml=file.endswith(".toml"))
        except ValueError as exc:
            raise ValueError(f"{path}: cannot be read for its limits: {exc}") from None
        table = {} if table is ABSENT or table is None else table
        if not isinstance(table, dict):
            raise ValueError(f"{where}: must be a mapping")
        return cls(
            shell_timeout=_positive(table, "shell_timeout", defaults.shell_timeout, where),
            output_limit=int(_positive(table, "output_limit", defaults.output_limit, where)),
        )


def _positive(table: dict, name: str, default: float, where: str) -> float:
    value = table.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{where}.{name}: must be a positive number, got {value!r}")
    return value


def limits_verdict(trajectory: Trajectory, limits: ProtectedLimits, run: AgentRun) -> Trajectory:
    """The trajectory with what the host did to hold the limits, and held to them itself:
    `metadata["shell_timeout"]` lists the commands the watchdog killed (the model read them
    as killed by SIGKILL), `metadata["output_limit"]` counts the tool results the gateway cut;
    the trajectory's own tool messages (chat-shaped) are cut the same way, so what the
    framework keeps is no larger than what the model could read."""
    metadata = dict(trajectory.metadata)
    if run.shell_kills:
        metadata["shell_timeout"] = {
            "limit": limits.shell_timeout,
            "killed_by_host": [
                {"command": k.command, "seconds": k.seconds} for k in run.shell_kills
            ],
        }
    if run.usage is not None and run.usage.clipped:
        metadata["output_limit"] = {
            "limit": limits.output_limit,
            "tool_results_cut_by_gateway": run.usage.clipped,
        }
    messages = [dict(m) for m in trajectory.messages]
    clip_tool_results({"messages": messages}, "chat", limits.output_limit)
    return trajectory.model_copy(update={"metadata": metadata, "messages": messages})
