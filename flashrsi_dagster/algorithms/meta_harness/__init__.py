"""Meta-Harness (seed 000): the history folder for the Worker, one candidate per step,
best-on-dev promotion, the sealed test once at the end."""

from flashrsi_dagster.algorithms.entry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    package=__name__,
    config=".config:MetaHarnessConfig",
    engine=".run:MetaHarness",
    definitions=".defs:DEFS",
    policies={"simulator/worker": "flashrsi_dagster.offline_model.policies.worker:improve"},
)
