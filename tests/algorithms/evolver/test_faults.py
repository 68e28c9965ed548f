"""The Evolver when things go wrong, on real rollouts: Gate0 stops a step on a broken
environment before anything is written; infrastructure failures stay in the denominator (Gate-f
reports them); errored rounds use no patience; a run killed with SIGKILL resumes from its
journal to the same result as a run never interrupted."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.evolver.health import Unhealthy
from flashrsi_dagster.algorithms.evolver.run import Evolver
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import Status, Trajectory, read_record
from tests.algorithms.evolver.scripted import fingerprint, routed, write_config
from tests.conftest import needs_jails
from tests.sabotage.helpers import say, script_model, unique

pytestmark = needs_jails

KEY_VAR = "FLASHRSI_TEST_EVOLVER_TARGET_KEY"


def opened(path: Path, *overrides: str, builders=None) -> Evolver:
    extra = {"builders": builders} if builders is not None else {}
    config = load_config(path, list(overrides))
    return Evolver(open_experiment(config), log=lambda _: None, **extra)


# -- Gate0 ------------------------------------------------------------------------------------


def test_gate0_stops_the_cold_start_on_a_refused_key_before_anything_is_written(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_VAR, "sk-evolver-wrong-key-0000")
    with OfflineModelServer(ServerConfig(accepted_keys=("sk-evolver-right-key",))) as server:
        evolver = opened(
            write_config(tmp_path, k=1),
            *("--agent.llm.base_url", server.url),
            *("--agent.llm.api_key", "${" + KEY_VAR + "}"),
        )
        with pytest.raises(
            Unhealthy,
            match=r"(?s)Gate0 before the cold start.*agent\.llm: .*"
            r"HTTP 401 \(the key is refused\)",
        ):
            evolver.run()
        assert not server.requests or all(r.api == "models" for r in server.requests)
    assert not evolver.layout.folder.exists()  # no rollout, no record


def test_gate0_runs_before_every_round_too(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_VAR, "sk-evolver-right-key")
    with OfflineModelServer(ServerConfig(accepted_keys=("sk-evolver-right-key",))) as server:
        evolver = opened(
            write_config(tmp_path, k=1),
            *("--agent.llm.base_url", server.url),
            *("--agent.llm.api_key", "${" + KEY_VAR + "}"),
        )
        evolver.run(until="diagnose")
        assert evolver.read_state().cold_start is not None
        monkeypatch.setenv(KEY_VAR, "sk-evolver-rotated-away")
        with pytest.raises(Unhealthy, match="Gate0 before round 1"):
            evolver.run()
    assert not evolver.layout.plan(1).exists()


# -- infrastructure failures ------------------------------------------------------------------


def test_infra_failures_stay_in_a_fixed_denominator_and_gate_f_reports_them(tmp_path):
    faulty = ServerConfig(failure_rate=0.12, failure_kinds=("500",), seed=3)
    with OfflineModelServer(faulty) as server:
        evolver = opened(
            write_config(tmp_path, k=2, max_rounds=1, patience=1),
            *("--agent.llm.base_url", server.url),
            *("--agent.llm.max_retries", "0"),
            *("--benchmark.max_infra_reruns", "0"),
        )
        state = evolver.run()
    cold = evolver.recorded(evolver.layout.cold_start_rollouts)
    assert any(t.status == Status.INFRA_ERROR for t in cold)
    assert len(cold) == 12 * 2  # nothing dropped
    gated = [n for n in evolver.nodes(state) if n.gates]
    assert gated, "a candidate reached the confirm"
    for node in gated:
        runs = evolver.recorded(evolver.layout.candidate(node.round, node.slot, "confirm.jsonl"))
        infra = sorted({t.task_id for t in runs if t.status == Status.INFRA_ERROR})
        gate_f = node.gates[0]
        assert gate_f["name"] == "gate_f" and gate_f["passed"]
        assert gate_f["reason"].startswith(f"{len(infra)} task(s) with infrastructure failures")
        assert all(task in gate_f["reason"] for task in infra)
        assert "denominator 12 x 2" in gate_f["reason"]
        assert node.confirm_mean == pytest.approx(sum(t.score or 0.0 for t in runs) / 24)


# -- errored rounds ---------------------------------------------------------------------------


def test_errored_rounds_use_no_patience_and_errors_in_a_row_stop_the_run(tmp_path):
    broken = script_model(unique("evolver-broken-designer"), [{"error": 500}] * 200)
    evolver = opened(
        write_config(tmp_path, k=1, patience=1, max_consecutive_errors=2, max_rounds=5),
        builders=routed(design=broken),
    )
    state = evolver.run()
    assert state.outcomes() == ["errored", "errored"]  # patience 1 would have stopped at 1
    for rd in state.rounds:
        assert {n.state for n in rd.nodes.values()} == {"errored"}
        assert all("the design run failed" in n.reason for n in rd.nodes.values())
    assert "terminated: consecutive_errors" in "\n".join(evolver.summary(state))
    assert state.retention  # the run still ends with the unsealed test


def test_a_malformed_diagnosis_is_asked_again_with_its_parse_error(tmp_path):
    """Seed 004's SemanticNode: the parse error goes back to the model, bounded by
    `answer_retries`; every answer is kept and the evolution goes on."""
    judge = script_model(
        unique("evolver-malformed-judge"),
        [say("Mostly missing cues, I would say."), *[say('{"diagnoses": []}')] * 4],
    )
    evolver = opened(write_config(tmp_path, k=1), builders=routed(judge=judge))
    evolver.run(until="diagnose")
    assert evolver.read_state().cold_start is not None
    first = read_record(evolver.layout.model_call(0, "diagnose-1-malformed-1"), Trajectory)
    assert first.answer == "Mostly missing cues, I would say."
    retried = read_record(evolver.layout.model_call(0, "diagnose-1"), Trajectory)
    told = json.dumps(retried.messages)
    assert "could not be read" in told and "without a JSON object" in told


# -- journal resume ---------------------------------------------------------------------------

DRIVER = """
import sys
from flashrsi_dagster.algorithms.evolver.run import Evolver
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment
Evolver(open_experiment(load_config(sys.argv[1])), log=lambda _: None).run()
"""


@pytest.mark.slow
def test_a_run_killed_mid_candidate_resumes_to_the_uninterrupted_result(tmp_path):
    # Two rounds: the kill falls in round 1, and round 2 diagnoses the children it confirmed.
    shape = {"k": 2, "max_rounds": 2}
    reference = opened(write_config(tmp_path / "reference", **shape))
    reference.run(until="candidate")  # the cold start and round 1's diagnosis, shared:
    shutil.copytree(tmp_path / "reference" / "home", tmp_path / "killed" / "home")
    path = write_config(tmp_path / "killed", **shape)  # the same experiment, moved
    reference.run()

    killed = opened(path)
    marker = killed.layout.candidate(1, "w1c1", "confirm.jsonl")
    process = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(path)], start_new_session=True, cwd=Path.cwd()
    )
    try:
        deadline = time.monotonic() + 240
        while not (marker.exists() and marker.stat().st_size > 0):
            assert process.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "the run never reached the confirm"
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert not killed.layout.node("r001.w1c1").exists()  # cut off mid-confirm

    resumed = opened(path)
    resumed.run()
    assert fingerprint(resumed) == fingerprint(reference)
    resumed.experiment.records.verify()
