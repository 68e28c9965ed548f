"""What Harbor's `docker` environment needs on the machine its trials run on: the Docker CLI,
an engine answering it (`DOCKER_HOST` or the default socket), and the Compose v2 plugin
(`docker compose`): Harbor 0.25 starts, copies into and stops every trial's environment through
`docker compose ... up --wait`, which Compose v1 (Debian bookworm's `docker-compose`) lacks."""

from __future__ import annotations

import shutil
import subprocess


def missing() -> str | None:
    """What is missing for Harbor's `docker` environment here, in one line; None if nothing."""
    if shutil.which("docker") is None:
        return "the Docker CLI is not on PATH (Debian: apt-get install docker.io)"
    engine = _docker("info", "--format", "{{.ServerVersion}}")
    if engine.returncode != 0:
        why = (engine.stderr.strip().splitlines() or ["no answer"])[-1]
        return f"no Docker engine answers `docker info` (DOCKER_HOST, or start dockerd): {why}"
    if _docker("compose", "version", "--short").returncode != 0:
        return (
            "the Compose v2 plugin (`docker compose`) is missing, and Harbor runs every trial "
            "through it; Debian bookworm's `docker-compose` is Compose v1, which Harbor cannot "
            "use (install Docker's docker-compose-plugin, or use harbor_environment: local)"
        )
    return None


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=30)
