"""Random search over a fixed set of edits: a fourth algorithm, written outside the package
and registered by one line (`FLASHRSI_ALGORITHMS=random_search=tests.algorithms.random_search`),
to prove an algorithm is one folder. The seed is evaluated on dev; each round applies one edit
drawn from the config's list to the seed and evaluates it on dev; the best dev score is
promoted and the sealed test run once. No Worker: the edits are given."""

from flashrsi_dagster.algorithms.entry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    package=__name__,
    config=".config:RandomSearchConfig",
    engine=".run:RandomSearch",
    definitions=".defs:DEFS",
)
