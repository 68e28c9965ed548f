"""The Evolver SOP (seed 004): a cold start on train, then rounds of the seven-step funnel —
diagnose, choose, prune for free, apply, screen and confirm, gates, pick the parent — until
patience or the round cap, then the sealed test's retention report. The pure pieces live in
modules named for what they decide; the state machine drives them on the algorithm seam."""

from flashrsi_dagster.algorithms.entry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    package=__name__,
    config=".config:EvolverConfig",
    engine=".run:Evolver",
    definitions=".defs:DEFS",
    policies={"simulator/evolver": "flashrsi_dagster.offline_model.policies.evolver:evolver"},
)
