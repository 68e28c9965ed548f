"""Runs and steps in containers of the code location's image (dagster-docker): one config,
rendered for the instance's `DockerRunLauncher` (a container per run) and for the jobs'
`docker` executor (a container per step).

What every container shares with the machine that launched it:

- the experiment home, bind-mounted at the same path and named to the code location by
  `FLASHRSI_HOME` (whatever the folder is called), so that the definitions' home and every
  path in the records mean the same inside and out; the folder holding it is the working
  folder;
- the host's network (no bridge: `network: host`), so the instance's database, the broker and
  model endpoints on 127.0.0.1 are reached as from the host;
- environment variables passed by name, never by value: the instance's `{env: VAR}` settings
  (a PostgreSQL URL with its password) are read from the launching process.

Agents jail themselves with bubblewrap inside the container, which needs namespaces, mounts
and an unmasked /proc that a default container withholds: `jails: true` asks for a
`privileged` container, which only an engine holding every capability can start (not this
machine's: it runs with fewer, so experiments in containers here use `confinement: none`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.deployment.code_server import HOME_ENV
from flashrsi_dagster.images.build import DEFAULT_IMAGE


class ContainerConfig(BaseModel):
    """Where containers of the code location run, for one experiment home."""

    model_config = ConfigDict(extra="forbid")

    home: Path = Field(description="The experiment home (absolute), mounted at the same path.")
    image: str = Field(DEFAULT_IMAGE, description="The code location's image.")
    network: str = Field("host", description="A Docker network; `host` shares the host's.")
    env_vars: list[str] = Field(
        default_factory=list,
        description="Variables passed from the launching process by name (`VAR`), or set "
        "(`VAR=value`, never for a secret).",
    )
    jails: bool = Field(
        False, description="A privileged container, for the agents' bubblewrap jails inside."
    )

    def container(self) -> dict[str, Any]:
        """dagster-docker's container config (the launcher's and the executor's schema)."""
        home = self.home.resolve()
        kwargs = {"volumes": [f"{home}:{home}"], "working_dir": str(home.parent)}
        return {
            "image": self.image,
            "network": self.network,
            "env_vars": [f"{HOME_ENV}={home}", *self.env_vars],
            "container_kwargs": {**kwargs, **({"privileged": True} if self.jails else {})},
        }

    def run_launcher(self) -> dict[str, Any]:
        """The instance's `run_launcher` section: every run in a container of its own."""
        launcher = {"module": "dagster_docker", "class": "DockerRunLauncher"}
        return {**launcher, "config": self.container()}

    def run_launcher_yaml(self) -> str:
        """`run_launcher` as dagster.yaml text, to add to an instance's settings."""
        return yaml.safe_dump({"run_launcher": self.run_launcher()}, sort_keys=False)

    def executor(self) -> dict[str, Any]:
        """Run config choosing the `docker` executor: every step in a container of its own."""
        return {"execution": {"config": {"docker": self.container()}}}
