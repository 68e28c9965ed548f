"""Sabotage by the endpoint: the target's model hangs.

A run cut at its timeout while waiting on the model says nothing about the harness, so it must
be an infrastructure fault (rerun by the ladder, then scored 0 with the denominator kept), not
the harness's verdict `timeout`: at the cut, the gateway still has the call in flight, and
it times out there once waited for (`environments.confinement.gateway_verdict`). Each test
serves the target from a simulator of its own whose seeded fault plan decides which requests
hang.
"""

from __future__ import annotations

from pathlib import Path

from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.offline_model import OfflineModelServer, RequestRecord, ServerConfig
from flashrsi_dagster.records import Status, Trajectory
from flashrsi_dagster.rollouts.record import RolloutRecord
from tests.agents.conftest import timed_out_while_running
from tests.conftest import PATIENCE, needs_jails
from tests.sabotage.helpers import config, shell, start

pytestmark = needs_jails

SCRIPT = "sleepy-target"


def _hanging_server(seed: int) -> OfflineModelServer:
    """Half the requests hang (until the server closes); which ones is fixed by `seed` (see
    FaultPlan)."""
    plan = ServerConfig(
        failure_rate=0.5,
        failure_kinds=("hang",),
        hang_seconds=2 * PATIENCE,
        seed=seed,
        scripts={SCRIPT: [shell("sleep 0.8")] * 4},
    )
    return OfflineModelServer(plan)


def _evaluate_seed(home: Path, server: OfflineModelServer, *overrides: str) -> MetaHarness:
    harness = start(
        config(
            home,
            *("--benchmark.limit", "1", "--benchmark.max_infra_reruns", "1"),
            *("--agent.llm.base_url", server.url, *overrides),
        )
    )
    try:
        harness.evaluate_seed()
    finally:
        harness.close()
    return harness


def _tries(harness: MetaHarness) -> list[Trajectory]:
    return RolloutRecord(harness.layout.rollouts(0), harness.experiment.redactor).load()


def test_a_run_cut_while_the_model_hangs_is_an_infrastructure_fault(tmp_path: Path):
    """Attack (or accident): the model answers the target's first call (a 0.8 s shell
    command), then hangs on the second; the run is cut at its timeout (2.5 s, doubled until
    a loaded machine gets both tries to the hung call) while that call is in flight (the
    gateway would give up on it only `llm.timeout`, 0.5 s less, after it began). What stops it
    counting as the harness's failure: the call, still in flight at the cut, is waited for
    until it times out at the gateway's deadline (a call the harness abandoned would be
    answered: round 15), and that turns the `timeout` into `infra_error`, which the ladder
    reruns (the rerun meets the same fate)."""

    def run(timeout: float, attempt: int) -> tuple[MetaHarness, list[RequestRecord]]:
        with _hanging_server(seed=3) as server:  # requests: ok, hang, ok, hang
            llm = ("--agent.llm.model", f"simulator/script:{SCRIPT}")
            llm += ("--agent.llm.timeout", str(timeout - 0.5), "--agent.llm.max_retries", "0")
            harness = _evaluate_seed(
                tmp_path / f"home-{attempt}", server, *llm, "--agent.timeout", str(timeout)
            )
        return harness, [r for r in server.requests if r.fault == "hang"]  # logged once cut

    (harness, _), timeout = timed_out_while_running(
        run, lambda outcome: len(outcome[1]) == 2, first=2.5
    )

    tries = _tries(harness)
    assert [t.metadata["rerun"] for t in tries] == [0, 1]
    for trajectory in tries:
        assert trajectory.status == Status.INFRA_ERROR, trajectory.error
        assert trajectory.error is not None and trajectory.error.type == "EndpointHung"
        assert "(0 call(s) in flight, 1 timed out)" in trajectory.error.message
        assert trajectory.duration >= timeout
    round_zero = harness.read_state().rounds[0]
    assert (round_zero.dev_score, round_zero.dev_tasks) == (0.0, 1)  # kept, scored 0


def test_a_run_that_recovers_from_one_hung_call_keeps_its_verdict(tmp_path: Path):
    """Accident: the first model call hangs, the SDK gives up after 5 s and retries, the retry
    answers, the run completes. Holds: only a cap refusal is a refusal (`RunUsage.capped`), so
    that run's verdict is its answer's."""
    with _hanging_server(seed=38) as server:  # requests: hang, then none
        harness = _evaluate_seed(
            tmp_path / "home",
            server,
            *("--agent.llm.timeout", "5", "--agent.llm.max_retries", "2"),
            *("--agent.timeout", str(PATIENCE)),
        )

    first = _tries(harness)[0]
    assert first.answer is not None  # it did answer, after the retry
    assert first.status in (Status.SUCCESS, Status.FAILURE), first.error
