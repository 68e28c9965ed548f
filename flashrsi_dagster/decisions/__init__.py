"""The host's duties (seed 003): the decision ledger, roll-backs, and the multi-metric
comparison of a candidate with its baseline under a declared trade-off rule."""

from flashrsi_dagster.decisions.compare import Comparison, ComparisonError, compare, metrics
from flashrsi_dagster.decisions.ledger import (
    EXPERIMENT,
    Decision,
    Evidence,
    Ledger,
    Ref,
    eval_set_version,
)
from flashrsi_dagster.decisions.rollback import RollbackError, rollback

__all__ = [
    "EXPERIMENT",
    "Comparison",
    "ComparisonError",
    "Decision",
    "Evidence",
    "Ledger",
    "Ref",
    "RollbackError",
    "compare",
    "eval_set_version",
    "metrics",
    "rollback",
]
