"""The offline model simulator as a Dagster resource: started when an experiment asks for it
(a role with `base_url: offline`), stopped when the run's step ends."""

from __future__ import annotations

import dagster as dg
from pydantic import Field, PrivateAttr

from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.llm import endpoints


class OfflineModelResource(dg.ConfigurableResource):
    """The built-in model server that `base_url: offline` roles talk to over HTTP."""

    start: bool = Field(
        True,
        description="Start the simulator for experiments that ask for it; off: such "
        "experiments are refused (a deployment that must only reach real models).",
    )
    latency_ms: float = Field(0.0, ge=0, description="Delay added to every model request.")
    jitter_ms: float = Field(0.0, ge=0, description="Random spread of that delay, either way.")
    seed: int = Field(0, description="Seeds the jitter: same seed and requests, same run.")
    _started: bool = PrivateAttr(False)

    def serve(self, config: ExperimentConfig) -> str | None:
        """The simulator's URL when the experiment uses it (starting it if needed)."""
        if not endpoints.uses_offline(*(role.llm for role in config.roles().values())):
            return None
        if not self.start:
            raise RuntimeError(
                f"experiment {config.experiment.name!r} asks for the offline model (a role's "
                "llm.base_url is `offline`) but the offline_model resource has start: false"
            )
        if not endpoints.offline_server_running():
            from flashrsi_dagster.offline_model import ServerConfig

            settings = ServerConfig(
                latency_ms=self.latency_ms, jitter_ms=self.jitter_ms, seed=self.seed
            )
            endpoints.offline_server(settings)
            self._started = True
        return endpoints.offline_server().url

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._started:  # a server someone else started (a test, the CLI) is theirs
            endpoints.stop_offline_server()
            self._started = False
