"""Best-of-N (issue 24): the budget-matched control. N independent Worker edits of the seed,
each evaluated on dev, the best kept; optionally stopped at the Worker budget of the
experiment it controls. It answers whether a search beat trivial sampling."""

from flashrsi_dagster.algorithms.entry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    package=__name__,
    config=".config:BestOfNConfig",
    engine=".run:BestOfN",
    definitions=".defs:DEFS",
    policies={
        "simulator/sampling-worker": "flashrsi_dagster.offline_model.policies.sampling:sample"
    },
)
