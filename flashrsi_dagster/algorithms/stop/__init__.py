"""STOP (Zelikman et al., COLM 2024): an improver program that improves itself, run jailed,
its utility and budgets held by the host, every circumvention attempt flagged."""

from flashrsi_dagster.algorithms.entry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    package=__name__,
    config=".config:StopConfig",
    engine=".run:Stop",
    definitions=".defs:DEFS",
    policies={"simulator/stop": "flashrsi_dagster.offline_model.policies.stop:improve"},
)
