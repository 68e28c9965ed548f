"""Where Harbor tasks run, as a Dagster resource: the benchmark a run evaluates on.

Terminal-Bench tasks run in a Harbor environment: the local namespaces + chroot one (no
Docker engine needed), Harbor's `docker`, or any Harbor environment class. The experiment
names one (`benchmark.harbor_environment`); this resource can move a deployment's runs
elsewhere (a Docker host, say) without touching the experiment: rewards come from the task's
own verifier either way."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from flashrsi_dagster.benchmarks.base import Benchmark
from flashrsi_dagster.benchmarks.loading import load_benchmark
from flashrsi_dagster.config.models import BenchmarkConfig

HARBOR_BENCHMARKS = ("terminal_bench",)


class HarborEnvironmentResource(dg.ConfigurableResource):
    """The Harbor environment Terminal-Bench trials run in."""

    environment: str | None = Field(
        None,
        description="`local`, `docker`, or a Harbor environment class as `package.module:Class`; "
        "unset: the experiment's own `benchmark.harbor_environment`.",
    )

    def benchmark(self, config: BenchmarkConfig) -> Benchmark:
        if config.name in HARBOR_BENCHMARKS and self.environment is not None:
            config = config.model_copy(update={"harbor_environment": self.environment})
        return load_benchmark(config)
