"""DGM (seed 003, the Darwin Gödel Machine): an archive of self-modifying agents, parents
drawn by sigmoid(score) x 1/(1 + children), each editing a copy of itself from its own
evaluation logs; children admitted if they load and keep their editing ability; staged
evaluation on train, the best by dev tested once."""

from flashrsi_dagster.algorithms.entry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    package=__name__,
    config=".config:DgmConfig",
    engine=".run:Dgm",
    definitions=".defs:DEFS",
    policies={"simulator/dgm": "flashrsi_dagster.offline_model.policies.dgm:improve"},
)
