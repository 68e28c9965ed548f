"""Terminal-Bench-style tasks run through Harbor's own Trial and Job APIs.

Harbor (PyPI `harbor`, pinned to 0.25.0) is the Terminal-Bench 2 harness. A task is a folder::

    <task-id>/
    ├── task.toml          timeouts, network mode, resources (see harbor.models.task.config)
    ├── instruction.md     what the agent is told
    ├── environment/       Dockerfile and the files it COPYs
    ├── tests/test.sh      run by the verifier; writes /logs/verifier/reward.txt (or .json)
    └── solution/solve.sh  the reference solution the `oracle` agent runs

Modules: `tasks/` (the built-in suite) and `suite` (running tasks through Trial and Job, by
default in the local chroot environment, `flashrsi_dagster.environments.local_chroot`);
`benchmark` (Terminal-Bench as a FlashRSI benchmark; our agents run inside the task's
environment through `flashrsi_dagster.integrations.harbor`) and `targets` (Harbor's own agents
as FlashRSI targets); `scripted_agent` (a
Harbor agent that runs fixed shell commands, for tests).
"""

import os

# Harbor pulls in litellm, which otherwise fetches its model cost map over the network when
# imported, and Harbor's Job reports telemetry unless told not to. Neither may leave the machine.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HARBOR_TELEMETRY", "0")
