"""A role's permissions (`permissions.edit`, `shell`, `deny_tools`) as adapters enforce them.

Each adapter maps the framework's words onto its harness's tools (`denied_tools`) and refuses
in `config_problems` what it cannot enforce (`unknown_tools`). Who enforces what:
- `edit: false`: the kernel. The adapter mounts the working folder read-only in the jail,
  so no write succeeds, by a tool or by a command; the harness also offers no write command.
- `shell: false`, `deny_tools`: the harness does not offer those tools; since a harness is
  evolvable code, the model gateway refuses any model call whose request offers one
  (`Confinement.run(deny_tools=...)`, `RunUsage.denied`) and `permission_verdict` makes
  the run an error (`PermissionViolation`), never an infrastructure fault.
"""

from __future__ import annotations

from collections.abc import Iterable

from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.gateway import RunUsage
from flashrsi_dagster.records import ErrorInfo, Status, Trajectory

VIOLATION = "PermissionViolation"


def denied_tools(config: RoleConfig, shell_tools: Iterable[str], web_tools: Iterable[str] = ()):
    """The harness tool names a run of `config` may not offer: `deny_tools`, the harness's
    shell tools under `shell: false`, its web tools while the web is off."""
    denied = set(config.permissions.deny_tools)
    if not config.permissions.shell:
        denied.update(shell_tools)
    if not config.web.enabled:
        denied.update(web_tools)
    return frozenset(denied)


def unknown_tools(config: RoleConfig, known: Iterable[str], where: str, adapter: str) -> list[str]:
    """A `config_problems` line for `deny_tools` names the harness does not have."""
    known = tuple(known)
    unknown = [name for name in config.permissions.deny_tools if name not in known]
    if not unknown:
        return []
    return [
        f"{where}.permissions.deny_tools: {adapter} has no tool(s) "
        f"{', '.join(map(repr, unknown))}; its tools: {', '.join(known)}"
    ]


def permission_verdict(trajectory: Trajectory, usage: RunUsage | None) -> Trajectory:
    """An error when the gateway refused a model call offering a withheld tool."""
    if usage is None or not usage.denied:
        return trajectory
    error = ErrorInfo(type=VIOLATION, message=usage.denied[0])
    return trajectory.model_copy(update={"status": Status.ERROR, "error": error})
