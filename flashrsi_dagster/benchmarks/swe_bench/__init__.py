"""SWE-bench: real GitHub issues, resolved when the repository's own tests say so.

A task is one instance record of data downloaded separately (nothing is built in): the agent
gets the issue text; the verifier keeps the FAIL_TO_PASS and PASS_TO_PASS test lists, the test
patch and the gold patch; the metadata names the official Docker image the instance runs in.

Modules: `instances` (reading and checking records, the Task mapping, image names), `grading`
(the official resolution rule, and a pytest log parser), `benchmark` (`SWEBench`; its rollouts
refuse, since they need Docker and a container runner that is not built).
"""

from flashrsi_dagster.benchmarks.swe_bench.benchmark import (
    EnvironmentUnavailable,
    SWEBench,
    docker_problem,
)
from flashrsi_dagster.benchmarks.swe_bench.grading import (
    Grade,
    Outcome,
    ResolvedStatus,
    TestStatus,
    grade,
    parse_pytest_log,
)
from flashrsi_dagster.benchmarks.swe_bench.instances import image_name, read_instances

__all__ = [
    "EnvironmentUnavailable",
    "Grade",
    "Outcome",
    "ResolvedStatus",
    "SWEBench",
    "TestStatus",
    "docker_problem",
    "grade",
    "image_name",
    "parse_pytest_log",
    "read_instances",
]
