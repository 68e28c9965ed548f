"""Shared pieces for tests that run the local chroot environment: skip where it cannot run
(not root, tools missing), and build Harbor task folders on disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Set before anything imports Harbor (see flashrsi_dagster.benchmarks.harbor).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HARBOR_TELEMETRY", "0")

from flashrsi_dagster.environments.local_chroot.base_image import HostSystem
from flashrsi_dagster.environments.local_chroot.environment import (
    LocalChrootEnvironment,
    LocalEnvironmentUnavailable,
)


def _unavailable() -> str | None:
    try:
        LocalChrootEnvironment.preflight()
    except LocalEnvironmentUnavailable as exc:
        return str(exc)
    return None


REASON = _unavailable()
needs_local_env = pytest.mark.skipif(REASON is not None, reason=f"local environment: {REASON}")

HOST_IMAGES = HostSystem.read().images()
HOST_FROM = f"FROM {HOST_IMAGES[-1] if HOST_IMAGES else 'unknown-host-system'}"
"""A FROM line the local environment honours on this machine (its own system's image)."""

TASK_TOML = """\
schema_version = "1.4"

[agent]
timeout_sec = 60.0

[verifier]
timeout_sec = 30.0

[environment]
build_timeout_sec = 60.0
network_mode = "no-network"
"""


def write_task(
    root: Path,
    *,
    dockerfile: str = f"{HOST_FROM}\nWORKDIR /app\n",
    test_sh: str = "#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n",
    solve_sh: str = "#!/bin/bash\ntrue\n",
    task_toml: str = TASK_TOML,
    files: dict[str, str] | None = None,
) -> Path:
    """A task folder in Harbor's format; `files` go into `environment/`."""
    contents = {
        "task.toml": task_toml,
        "instruction.md": "Do the task.\n",
        "environment/Dockerfile": dockerfile,
        "tests/test.sh": test_sh,
        "solution/solve.sh": solve_sh,
        **{f"environment/{name}": text for name, text in (files or {}).items()},
    }
    for name, text in contents.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
