"""Statistics over scores tables: the paired comparison, the tests that hold at small n, the
corrections for picking the best of a family, and the failure map (engine, no Dagster)."""

from flashrsi_dagster.stats.failures import failure_map, failure_map_markdown
from flashrsi_dagster.stats.family import (
    CandidateTest,
    FamilyTests,
    family_markdown,
    family_tests,
    holm,
)
from flashrsi_dagster.stats.paired import (
    PairedStats,
    markdown_table,
    paired,
    per_task_table,
    task_rates,
    to_markdown,
)
from flashrsi_dagster.stats.small_n import (
    ALPHA,
    DifferenceTests,
    PermutationTest,
    SignTest,
    TTest,
    Verdict,
    decide,
    difference_tests,
    paired_t,
    permutation_test,
    sign_test,
)

__all__ = [
    "ALPHA",
    "CandidateTest",
    "DifferenceTests",
    "FamilyTests",
    "PairedStats",
    "PermutationTest",
    "SignTest",
    "TTest",
    "Verdict",
    "decide",
    "difference_tests",
    "failure_map",
    "failure_map_markdown",
    "family_markdown",
    "family_tests",
    "holm",
    "markdown_table",
    "paired",
    "paired_t",
    "per_task_table",
    "permutation_test",
    "sign_test",
    "task_rates",
    "to_markdown",
]
