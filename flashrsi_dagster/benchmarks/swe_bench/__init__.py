"""SWE-bench: real GitHub issues, resolved when the repository's own tests say so.

A task is one instance record (`examples/swe_bench_tiny` is a small set made here): the agent
gets the issue text; the verifier keeps the FAIL_TO_PASS and PASS_TO_PASS test lists, the test
patch and the gold patch; the metadata names the official Docker image the instance runs in.

Modules: `instances` (reading and checking records, the Task mapping, image names), `repos`
(local copies of the repositories, checkouts at a commit, the agent's changes as a patch),
`evaluation` (the harness's steps run locally, graded by the `swebench` package's own
`get_eval_report`: the official rule, not a copy of it), `docker_harness` (an instance's
environment as a Docker image built here, a patch evaluated in it by the package's own
`run_instance`, in a run with `benchmark.swe_bench_grading: docker`), `benchmark` (`SWEBench`).
"""

from flashrsi_dagster.benchmarks.swe_bench.benchmark import SWEBench
from flashrsi_dagster.benchmarks.swe_bench.instances import image_name, read_instances

__all__ = ["SWEBench", "image_name", "read_instances"]
