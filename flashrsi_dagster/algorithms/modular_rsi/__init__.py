"""ModularRSI (seed 001): independent module branches, a Worker-made integration, and the
sealed test once."""

from flashrsi_dagster.algorithms.entry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    package=__name__,
    config=".config:ModularRSIConfig",
    engine=".run:ModularRSI",
    definitions=".defs:DEFS",
    policies={
        "simulator/modular-worker": "flashrsi_dagster.offline_model.policies.modular_rsi"
        ":modular_worker",
        "simulator/reviewer": "flashrsi_dagster.offline_model.policies.modular_rsi:reviewer",
    },
)
