"""`gateway_verdict`: a run is an infrastructure fault when the gateway saw one, whatever the
harness says; a harness that claims one the gateway never saw gets no rerun."""

from __future__ import annotations

from flashrsi_dagster.environments.confinement import ENDPOINT_FAULT, gateway_verdict
from flashrsi_dagster.gateway import RunUsage
from flashrsi_dagster.records import ErrorInfo, Status, Trajectory


def _usage(**fields) -> RunUsage:
    base = {"input_tokens": 0, "output_tokens": 0, "cost_usd": None, "calls": 1}
    return RunUsage(**{**base, "refused": [], "in_flight": 0, "timed_out": 0, **fields})


def _run(status: Status, error: str | None = None) -> Trajectory:
    info = ErrorInfo(type="APIError", message=error) if error else None
    return Trajectory(task_id="t", snapshot_id="s", status=status, error=info)


def test_a_run_that_failed_after_its_last_call_failed_is_the_endpoints_fault_with_the_cause():
    cause = "the upstream answered an answer that is not valid JSON (...)"
    usage = _usage(failed=1, faults=[cause], last_fault=cause)

    verdict = gateway_verdict(_run(Status.ERROR, "Expecting value"), usage, timed_out=False)

    assert (verdict.status, verdict.error.type) == (Status.INFRA_ERROR, ENDPOINT_FAULT)
    assert verdict.error.message.startswith(cause)
    assert "(the run reported APIError: Expecting value)" in verdict.error.message


def test_a_run_whose_client_gave_up_on_a_call_still_in_flight_is_an_endpoint_fault():
    """The client's timeout and the gateway's deadline are one value: the client may give up
    first, before the gateway has recorded the fault."""
    claim = _run(Status.INFRA_ERROR, "Request timed out.")

    verdict = gateway_verdict(claim, _usage(in_flight=1), timed_out=False)

    assert (verdict.status, verdict.error.type) == (Status.INFRA_ERROR, "EndpointHung")


def test_a_fault_the_run_got_past_leaves_its_verdict_alone():
    recovered = _usage(calls=2, failed=1, faults=["the upstream answered HTTP 500"])

    assert gateway_verdict(_run(Status.SUCCESS), recovered, False).status == Status.SUCCESS
    agent_error = gateway_verdict(_run(Status.ERROR, "its own bug"), recovered, False)
    assert (agent_error.status, agent_error.error.type) == (Status.ERROR, "APIError")


def test_a_claim_the_gateway_never_saw_is_unbacked():
    verdict = gateway_verdict(_run(Status.INFRA_ERROR, "Connection error."), _usage(), False)

    assert (verdict.status, verdict.error.type) == (Status.ERROR, "UnbackedInfraClaim")
