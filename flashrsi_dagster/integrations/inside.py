"""Running a FlashRSI agent inside a Harbor task environment, from the host.

The host passes in what `staging` prepared (interpreter, its shared libraries, distributions,
framework source) and
the snapshot — read-only binds into the local environment's root, Harbor's generic
`upload_dir` elsewhere — opens the model gateway to the run with a per-run token, writes the
payload (the full resolved role config, the adapter's import path, the task), runs
`container_entry.py` with the environment's own variables plus the allow-list (nothing of the
host's environment), and reads the trajectory back (bounded). The gateway's count of the run's
usage and its verdict apply as for any jailed run.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from harbor.environments.base import BaseEnvironment

from flashrsi_dagster.agents.base import Agent, status_of
from flashrsi_dagster.agents.budgets import budget_verdict
from flashrsi_dagster.agents.permissions import permission_verdict
from flashrsi_dagster.agents.run_config import run_config_message
from flashrsi_dagster.environments.confinement import (
    BASE_ENV,
    Opening,
    RunSpec,
    gateway_verdict,
)
from flashrsi_dagster.environments.jail import listen_in
from flashrsi_dagster.integrations.staging import (
    ENTRY,
    INSIDE,
    PLACES,
    Staged,
    compiled_snapshot,
    distributions_for,
    staged,
)
from flashrsi_dagster.records import ErrorInfo, Status, Trajectory
from flashrsi_dagster.scratch import scratch_dir

MAX_RESULT_BYTES = 64 << 20
"""A trajectory larger than this is no result."""
START_GRACE = 120.0
"""Seconds beyond the role's timeout for the entry to start and write its result."""
RUN_ENV = {name: value for name, value in BASE_ENV.items() if name != "PATH"}
"""What the run adds to the environment's own variables: the allow-list, less `PATH`, which
stays the environment's (its tools live there)."""
_TAIL = 4000


async def run_inside(
    agent: Agent, environment: BaseEnvironment, instruction: str, task: dict[str, Any]
) -> Trajectory:
    """One run of `agent` inside `environment`; `task`: its `id`, `split` and `attempt`."""
    agent._check_container()
    config = agent.run_config
    ready = staged(distributions_for(type(agent)))
    folder = INSIDE / f"run-{uuid.uuid4().hex[:12]}"
    await _pass_in(environment, ready, compiled_snapshot(agent.files_dir), folder)
    with _gateway(agent, environment) as opening:
        payload = _payload(agent, opening, instruction, task, folder)
        payload["interpreter"] = list(ready.interpreter)
        trajectory = await _entry(environment, ready.interpreter, payload, folder, config.timeout)
    if not trajectory.messages:  # failed before the agent's own `run` could say it
        header = run_config_message(config, agent.snapshot_id, agent.role, agent.redactor)
        trajectory = trajectory.model_copy(update={"messages": [header]})
    trajectory = trajectory.model_copy(
        update={
            "task_id": task["id"],
            "split": task["split"],
            "attempt": task["attempt"],
            "snapshot_id": agent.snapshot_id or "",
        }
    )
    trajectory = Trajectory.model_validate(agent.redactor.value(trajectory.model_dump(mode="json")))
    # The host's count is the framework's own: what the agent inside reported may lie.
    trajectory = budget_verdict(trajectory, type(agent).gateway_budget(config), opening.usage)
    trajectory = permission_verdict(trajectory, opening.usage)
    return gateway_verdict(trajectory, opening.usage, trajectory.status == Status.TIMEOUT)


async def _entry(
    environment: BaseEnvironment,
    interpreter: tuple[str, ...],
    payload: dict,
    folder: Any,
    timeout: float,
) -> Trajectory:
    """Run the entry on `payload` in `environment` and read its trajectory back; the run's
    folder there is removed after (what is left of a dead environment is the verifier's
    business: it fails the trial)."""
    with scratch_dir("inside-") as host:
        (host / "payload.json").write_text(json.dumps(payload), encoding="utf-8")
        await environment.upload_file(host / "payload.json", f"{folder}/payload.json")
        argv = (*interpreter, "-I", "-S", PLACES["source"] / ENTRY, f"{folder}/payload.json")
        command = "exec " + " ".join(shlex.quote(str(part)) for part in argv)
        try:
            outcome = await environment.exec(
                command, env=RUN_ENV, timeout_sec=int(timeout + START_GRACE)
            )
        except Exception as exc:  # the entry outlived its timeout, or the exec failed
            trajectory = _failed(exc)
        else:
            result = await _result(environment, f"{folder}/result.json", host)
            # Harbor's docker environment gives the two streams as one, in stdout
            said = outcome.stderr or outcome.stdout or ""
            trajectory = _trajectory(result, outcome.return_code, said)
    with contextlib.suppress(Exception):
        await environment.exec(f"rm -rf {shlex.quote(str(folder))}", timeout_sec=60)
    return trajectory


async def _pass_in(
    environment: BaseEnvironment, ready: Staged, snapshot: Path, run: PurePosixPath
) -> None:
    """Read-only binds where the environment can share host folders (the local one), else
    copies (Harbor's `upload_dir`: Docker and the others, where they are writable); `run`:
    the run's own folder there, made with the copies' (its payload goes in next)."""
    folders = {
        ready.prefix: str(ready.prefix),
        ready.site_packages: str(PLACES["site_packages"]),
        ready.source: str(PLACES["source"]),
        snapshot: str(PLACES["snapshot"]),
        ready.libraries: str(PLACES["libraries"]),
    }
    share = getattr(environment, "share_read_only", None)
    if share is not None:
        await share(folders)
        return
    await _make_parents(environment, [*folders.values(), f"{run}/payload.json"])
    for source, target in folders.items():
        await environment.upload_dir(source, target)


async def _make_parents(environment: BaseEnvironment, targets: Iterable[str]) -> None:
    """The folders the copies go into, made first, as root: Docker's `cp` copies into an
    existing folder only (`Could not find the file /flashrsi in container`), and Harbor's
    fallback then tars the whole folder in memory (the interpreter's prefix: ~300 MB) and
    pipes it to `tar` inside, every trial."""
    parents = sorted({str(PurePosixPath(target).parent) for target in targets})
    command = "mkdir -p -- " + " ".join(shlex.quote(parent) for parent in parents)
    made = await environment.exec(command, timeout_sec=120, user="root")
    if made.return_code != 0:
        raise RuntimeError(
            f"cannot make {', '.join(parents)} in the task environment to pass the agent "
            f"in (exit {made.return_code}): {(made.stderr or made.stdout or '').strip()[-_TAIL:]}"
        )


@contextlib.contextmanager
def _gateway(agent: Agent, environment: BaseEnvironment) -> Iterator[Opening]:
    """A per-run token, and a gateway socket inside the environment's own network namespace
    when it has one the host can enter (the local environment, with or without network);
    otherwise the gateway's host listener, which the environment must be able to reach."""
    config = agent.run_config
    limits = agent.protected_limits()
    # The grant holds the role's budgets and permissions: the agent inside cannot change it.
    spec = RunSpec(
        agent.role,
        config.llm,
        writable=(),
        max_model_calls=type(agent).gateway_budget(config).max_model_calls,
        web=config.web,
        deny_tools=type(agent).gateway_denied(config),
        output_limit=limits.output_limit if limits else None,
    )
    gateway = agent.confinement.gateway
    assert gateway is not None
    with agent.confinement.granted(spec) as opening:
        pid = getattr(environment, "network_pid", None)
        if pid is None:
            yield opening
            return
        listener = listen_in(pid)
        gateway.serve(listener, token=opening.token)
        opening.base_url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        try:
            yield opening
        finally:
            gateway.unserve(listener)


def _payload(
    agent: Agent, opening: Opening, instruction: str, task: dict[str, Any], folder: Any
) -> dict[str, Any]:
    config = agent.run_config.model_dump(mode="json")
    # The snapshot is passed in on its own; a host folder would not exist there.
    config["source_dir"] = None
    return {
        "import_path": f"{type(agent).__module__}:{type(agent).__qualname__}",
        "config": config,
        "role": agent.role,
        "snapshot_id": agent.snapshot_id,
        "files_dir": str(PLACES["snapshot"]),
        "site_packages": str(PLACES["site_packages"]),
        "source": str(PLACES["source"]),
        "gateway": {"token": opening.token, "base_url": opening.base_url},
        "instruction": instruction,
        "task": task,
        "output": f"{folder}/result.json",
    }


async def _result(environment: BaseEnvironment, path: str, host: Path) -> dict | None:
    local = host / "result.json"
    try:
        await environment.download_file(path, local)
    except Exception:  # no result written: said by the trajectory
        return None
    if local.stat().st_size > MAX_RESULT_BYTES:
        return None
    try:
        result = json.loads(local.read_bytes())
    except ValueError:
        return None
    return result if isinstance(result, dict) else None


def _trajectory(result: dict | None, code: int | None, stderr: str) -> Trajectory:
    tail = stderr[-_TAIL:]
    if result is not None:
        try:
            trajectory = Trajectory.model_validate(result)
        except ValueError as exc:
            return _failed(exc, tail)
        return trajectory.model_copy(
            update={"metadata": {**trajectory.metadata, "inside_exit_code": code}}
        )
    error = ErrorInfo(
        type="ProcessError",
        message=f"the agent's entry in the task environment exited with code {code} "
        "without a result",
    )
    return Trajectory(
        task_id="",
        snapshot_id="",
        status=Status.ERROR,
        error=error,
        metadata={"exit_code": code, "stderr_tail": tail},
    )


def _failed(exc: BaseException, tail: str = "") -> Trajectory:
    timed_out = "timed out" in str(exc).lower() or isinstance(exc, TimeoutError)
    return Trajectory(
        task_id="",
        snapshot_id="",
        status=Status.TIMEOUT if timed_out else status_of(exc),
        error=ErrorInfo.from_exception(exc),
        metadata={"stderr_tail": tail} if tail else {},
    )
