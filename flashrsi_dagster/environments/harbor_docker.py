"""Harbor's own `docker` environment where the machine has no registry and no bridge network
(this one, CI): `harbor_environment: docker-offline`.

Harbor builds and runs every trial as it does with `docker` (its compose files,
`docker compose ... up --wait`, `down --rmi local` at the end), with two overlays after its own:
- the build on the host's network, where a Dockerfile's `apt-get` and `pip` reach the archives
  (the engine here runs with `--bridge none`, so a build on the default network reaches
  nothing), its image tagged by the environment's content (Harbor's `hb__<hash>`, which its
  own build file leaves unused): kept at a trial's end, so that the next trial of the same
  task, in this session or a later one, finds every layer built;
- the trial's container on no network at all (Harbor's `docker-compose-no-network.yaml`): no
  compose network is made, and a private range, which no traffic here may target, is never used.

A task's `no-network` policy is then kept without Harbor's egress-control sidecar, whose image
comes from a registry; an allowlist (`allowed_hosts`) cannot be honoured and is refused."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.environments.docker import COMPOSE_NO_NETWORK_PATH
from harbor.environments.docker.docker import DockerEnvironment
from harbor.models.task.config import NetworkMode, NetworkPolicy

BUILD_ON_HOST_NETWORK = Path(__file__).with_name("docker-compose-build-host-network.yaml")
OFFLINE_DOCKER_IMPORT_PATH = f"{__name__}:OfflineDockerEnvironment"


class OfflineDockerEnvironment(DockerEnvironment):
    """Harbor's `docker` environment, built on the host's network, run on none."""

    @staticmethod
    def _requires_egress_control(
        *,
        startup_network_policy: NetworkPolicy,
        phase_network_policies: Sequence[NetworkPolicy],
    ) -> bool:
        for policy in (startup_network_policy, *phase_network_policies):
            if policy.network_mode not in (NetworkMode.PUBLIC, NetworkMode.NO_NETWORK):
                raise ValueError(
                    f"network_mode {policy.network_mode.value!r} needs Harbor's egress-control "
                    "sidecar, whose image comes from a registry: harbor_environment "
                    "docker-offline runs every trial with no network (use docker where a "
                    "registry is reachable)"
                )
        return False

    network_pid: int | None = None
    """The trial container's first process, as the host sees it, once started: the model
    gateway listens on 127.0.0.1 in its network namespace (`integrations.inside`), the one way
    out of a container with no network. None where the engine is not on this host."""

    async def start(self, force_build: bool) -> None:
        await super().start(force_build)
        container = (await self._run_docker_compose_command(["ps", "-q", "main"])).stdout
        pid = subprocess.run(
            ["docker", "inspect", "--format", "{{.State.Pid}}", (container or "").strip()],
            capture_output=True, text=True, timeout=60, check=False,
        ).stdout.strip()  # fmt: skip
        if pid.isdigit() and Path(f"/proc/{pid}/ns/net").exists() and _engine_is_local():
            self.network_pid = int(pid)

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        """Harbor's, with internet disabled: every trial's container has no network."""
        return super().capabilities.model_copy(update={"disable_internet": True})

    @property
    def _docker_compose_paths(self) -> list[Path]:
        return [*super()._docker_compose_paths, BUILD_ON_HOST_NETWORK, COMPOSE_NO_NETWORK_PATH]


def _engine_is_local() -> bool:
    """Whether the engine runs on this host (its pids are this host's): a unix socket."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return host.startswith("unix://")
