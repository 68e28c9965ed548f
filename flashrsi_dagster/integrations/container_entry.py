"""The framework's entry inside a task environment: builds the agent and calls its `run`.

Run as `python -I -S container_entry.py <payload.json>`: `-I -S` ignore every `PYTHON*`
variable, the user's and the interpreter's site-packages, so the import path is exactly the
standard library plus the two folders the payload names (the staged distributions and the
framework source). The environment's variables — the task's `PYTHONPATH` included — are left
as they are, for the tools the agent runs. The payload holds the full resolved role config
(never a key: the gateway token of this run only), the adapter's import path and the task;
the trajectory is written as JSON to the payload's `output`.
"""

import json
import os
import sys


def main(payload_path: str) -> int:
    with open(payload_path, encoding="utf-8") as handle:
        payload = json.load(handle)
    # The framework's modules import gitpython, which refuses to load where the image has no
    # `git` (bare images); nothing the agent does inside needs it.
    os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")
    # Appended, never prepended: nothing shadows the standard library.
    sys.path[:] = [*sys.path, payload["site_packages"], payload["source"]]
    trajectory = _run(payload)
    with open(payload["output"], "w", encoding="utf-8") as handle:
        handle.write(trajectory.model_dump_json())
    return 0


def _run(payload: dict):
    from pathlib import Path

    from flashrsi_dagster.agents.base import ContainerUnsupported
    from flashrsi_dagster.records import ErrorInfo, Status, Trajectory

    agent, task = _agent(payload), payload["task"]
    try:
        # Checked again here: what the adapter needs (a CLI, say) must be in this environment.
        agent._check_container()
    except ContainerUnsupported as exc:
        agent.close()
        error = ErrorInfo.from_exception(exc)
        return Trajectory(task_id=task["id"], snapshot_id="", status=Status.ERROR, error=error)
    try:
        return agent.run(
            Path.cwd(),
            payload["instruction"],
            task_id=task["id"],
            split=task["split"],
            attempt=task["attempt"],
        )
    finally:
        agent.close()


def _agent(payload: dict):
    """The agent by its import path, with the handed role config, snapshot and gateway."""
    from pathlib import Path

    from flashrsi_dagster.agents.registry import adapter_class
    from flashrsi_dagster.config.models import RoleConfig
    from flashrsi_dagster.environments.runtime import use_interpreter, use_prepared
    from flashrsi_dagster.integrations.handed import HandedConfinement

    use_prepared(Path(payload["site_packages"]))
    use_interpreter(payload["interpreter"])
    gateway = payload["gateway"]
    confinement = HandedConfinement(token=gateway["token"], base_url=gateway["base_url"])
    adapter = adapter_class(payload["import_path"])
    config = RoleConfig.model_validate(payload["config"])
    agent = adapter(
        config, Path(payload["files_dir"]), role=payload["role"], confinement=confinement
    )
    agent.snapshot_id = payload["snapshot_id"]
    return agent


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
