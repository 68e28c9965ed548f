"""Which ready steps the sensor and `flashrsi run` request, given the experiment's active
runs: each ready step without an active run, once; nothing while another run is active."""

from __future__ import annotations

import dagster as dg

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.ready import not_active

MH = defs_for("meta_harness")


def _requests(*steps: Step) -> list[dg.RunRequest]:
    return [MH.request("exp", step) for step in steps]  # type: ignore[misc]


def _run(request: dg.RunRequest, *, keyed: bool = True) -> dg.DagsterRun:
    """An active run of the request: the driver's (with its run key) or the UI's (without)."""
    tags = {"dagster/partition": str(request.partition_key)}
    if keyed:
        tags["dagster/run_key"] = request.run_key
    return dg.DagsterRun(job_name=request.job_name, tags=tags)


CANDIDATES = [Step("propose", 1, f"c{i}") for i in range(4)]


def test_every_ready_candidate_is_requested_when_nothing_runs():
    ready = _requests(*CANDIDATES)
    assert not_active(ready, []) == ready


def test_a_candidate_with_an_active_run_is_not_requested_again():
    ready = _requests(*CANDIDATES)
    active = [_run(ready[0]), _run(ready[2], keyed=False)]  # the driver's and a UI launch
    assert [r.run_key for r in not_active(ready, active)] == [ready[1].run_key, ready[3].run_key]


def test_the_same_step_twice_in_the_ready_list_is_requested_once():
    ready = _requests(CANDIDATES[0], CANDIDATES[0])
    assert len(not_active(ready, [])) == 1


def test_an_active_run_of_another_step_holds_everything_back():
    earlier = _requests(Step("evaluate_seed", 0, "c0"))[0]
    assert not_active(_requests(*CANDIDATES), [_run(earlier)]) == []
    promote = _requests(Step("promote"))
    assert not_active(promote, [_run(_requests(CANDIDATES[3])[0])]) == []  # still ending
    ui_finalize = dg.DagsterRun(job_name="meta_harness_finalize", tags={"dagster/partition": "exp"})
    assert not_active(_requests(Step("sealed_test")), [ui_finalize]) == []
