"""The host's duties toward its evaluator: a fixed, verified checker and versioned sets.

`Evaluator.before(...)` runs before every evaluation of every algorithm: it shows the
evaluator's files to be the recorded ones and names the evaluation-set version the
evaluation uses; `compare.basis` labels every comparison with its versions.
"""

from flashrsi_dagster.evaluator.compare import Basis, DifferentEvalSets, basis, require_same
from flashrsi_dagster.evaluator.guard import Evaluator
from flashrsi_dagster.evaluator.manifest import EvaluatorChanged, EvaluatorManifest
from flashrsi_dagster.evaluator.sets import EvalSets, EvalSetVersion

__all__ = [
    "Basis",
    "DifferentEvalSets",
    "EvalSetVersion",
    "EvalSets",
    "Evaluator",
    "EvaluatorChanged",
    "EvaluatorManifest",
    "basis",
    "require_same",
]
