"""The decision ledger of real experiments on the offline simulator: what each algorithm
adopts and rejects, the reasons and evidence, the raw results kept, and no entry written twice."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.algorithms.modular_rsi.run import ModularRSI
from flashrsi_dagster.config import load_config
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.decisions.report import ledger_lines
from tests.run_wide import made_once

EXAMPLES = Path(__file__).parents[2] / "examples"


def demo_harness(home: Path, *overrides: str) -> MetaHarness:
    """The Meta-Harness demo, 2 steps on 6 tasks, its experiment in `home`."""
    from flashrsi_dagster.experiment import open_experiment

    args = ["--experiment.home", str(home), "--algorithm.max_steps", "2", "--benchmark.limit", "6"]
    config = load_config(EXAMPLES / "meta_harness.yaml", [*args, *overrides])
    return MetaHarness(open_experiment(config), log=lambda _: None)


def meta_harness_demo(home: Path, *overrides: str) -> MetaHarness:
    """The Meta-Harness demo, 2 steps on 6 tasks, run to its end on the engine."""
    harness = demo_harness(home, *overrides)
    harness.run()
    return harness


@pytest.fixture(scope="module")
def mh(tmp_path_factory, worker_id) -> MetaHarness:
    """The finished demo, a copy of the run's own (its snapshots are pruned below)."""
    home = tmp_path_factory.mktemp("mh") / "home"
    return demo_harness(copy_experiment(finished_demo(tmp_path_factory, worker_id), home))


def test_meta_harness_adopts_the_promoted_snapshot_and_rejects_the_others_with_evidence(mh):
    state, entries = mh.read_state(), Ledger.of(mh.experiment).entries()
    promotion, seed = state.promotion, state.round(0)

    adopt = entries[-1]
    assert [e.decision for e in entries] == ["reject", "adopt"]  # round 2 lost the tie
    assert adopt.scope == "experiment" and adopt.candidate.snapshot_id == promotion.snapshot_id
    assert adopt.baseline.snapshot_id == seed.snapshot_id and adopt.baseline.round == 0
    assert adopt.reason.startswith(f"promoted: the best dev score, {promotion.dev_score:.3f}")
    assert "trade-off rule: meets" in adopt.reason and "score lift >= +0" in adopt.reason
    comparison = adopt.evidence.comparison
    assert comparison.baseline.score == seed.dev_score
    assert comparison.candidate.score == promotion.dev_score
    assert {c.metric for c in comparison.changes} >= {"tool_calls", "tokens", "cost", "wall_time"}
    assert adopt.evidence.paired["n"] == 6 and adopt.evidence.paired["won"] >= 1
    assert adopt.eval_set == comparison.eval_set == "dev/e1"  # the versioned set it ran
    assert Ledger.of(mh.experiment).baseline() == adopt

    # the demo's honest candidate: the same calls per task, more tokens, not flagged
    signal = adopt.evidence.behaviour
    assert signal["verdict"] == "consistent" and signal["tasks"] == 6
    assert signal["calls_ratio"] == 1 and signal["tokens_ratio"] > 1
    assert not any("WARNING" in line for line in ledger_lines(Ledger.of(mh.experiment)))

    reject = entries[0]
    assert reject.candidate.round == 2 and reject.scope == "search"
    assert "not promoted (ranked 2 of 3)" in reject.reason
    assert "ties keep the earlier round" in reject.reason
    mh.experiment.records.verify()


def test_a_rejected_candidate_keeps_its_content_raw_results_and_reason(mh):
    reject = Ledger.of(mh.experiment).entries()[0]
    root = mh.experiment.paths.root

    assert "records/meta_harness/round-002-dev.jsonl" in reject.raw
    assert all((root / path).is_file() for path in reject.raw)
    subprocess.run(
        ["git", "gc", "--prune=now", "--quiet"], cwd=mh.experiment.paths.snapshots, check=True
    )
    kept = mh.experiment.snapshots.get(reject.candidate.snapshot_id)
    assert kept.parent_id == mh.read_state().round(0).snapshot_id


def test_reading_steps_back_or_running_again_writes_no_entry_twice(mh):
    ledger = Ledger.of(mh.experiment)
    before = ledger.path.read_bytes()

    mh.record_decisions()
    mh.promote()  # read back
    mh.finish_round(1)
    mh.run()

    assert ledger.path.read_bytes() == before


def test_meta_harness_rejects_a_noop_edit_when_its_round_is_recorded(tmp_path):
    from flashrsi_dagster.llm.endpoints import offline_server

    offline_server().add_script("ledger-noop", ["nothing to change"] * 4)
    harness = meta_harness_demo(
        tmp_path, "--algorithm.worker.llm.model", "simulator/script:ledger-noop"
    )

    rejects = [e for e in Ledger.of(harness.experiment).entries() if e.id.endswith("r001.c0")]
    assert len(rejects) == 1 and rejects[0].decision == "reject"
    assert rejects[0].reason.startswith("the Worker's edit was noop")
    assert rejects[0].evidence.gates[0]["passed"] is False and rejects[0].eval_set is None
    assert "records/meta_harness/round-001-worker.json" in rejects[0].raw


def test_modular_rsi_adopts_for_branches_rejects_with_gate_verdicts_and_compares_the_promotion(
    tmp_path,
):
    from flashrsi_dagster.experiment import open_experiment

    config = load_config(EXAMPLES / "modular_rsi.yaml", ["--experiment.home", str(tmp_path)])
    algorithm = ModularRSI(open_experiment(config), log=lambda _: None)
    state = algorithm.run()
    entries = Ledger.of(algorithm.experiment).entries()
    by_id = {e.id: e for e in entries}

    steps = [r for r in state.steps.values() if r.status in ("accepted", "rejected")]
    assert len(entries) == len(steps) + 1  # no entry for no_change, one for the promotion
    rejected = by_id["modular_rsi/r000.agent_loop"]
    assert rejected.decision == "reject" and rejected.scope == "branch:agent_loop"
    assert rejected.reason.startswith("review gate:")
    assert [(g["name"], g["passed"]) for g in rejected.evidence.gates] == [
        ("scope", True),
        ("content", True),
        ("compile", True),
        ("review", False),
    ]
    assert rejected.eval_set == "train/e1"  # the versioned set the batch was drawn from
    root = algorithm.experiment.paths.root
    assert "records/modular_rsi/agent_loop/step-000-edit.json" in rejected.raw
    assert algorithm.experiment.snapshots.get(rejected.candidate.snapshot_id)
    adopted = by_id["modular_rsi/r000.observation_management"]
    assert adopted.decision == "adopt" and adopted.evidence.gates[-1]["name"] == "execution"
    assert "no task set to compare it on" in adopted.evidence.not_compared

    promotion = entries[-1]
    assert promotion.id == "modular_rsi/promotion" and promotion.scope == "experiment"
    assert promotion.candidate.snapshot_id == state.promotion.snapshot_id
    assert promotion.baseline.snapshot_id == algorithm.seed().id
    comparison = promotion.evidence.comparison
    assert comparison.candidate.tasks == comparison.baseline.tasks == 6
    assert comparison.candidate.score > comparison.baseline.score
    assert "against the seed on every evolution task: meets" in promotion.reason
    assert (root / "records/modular_rsi/baseline-check.jsonl").is_file()
    algorithm.experiment.records.verify()

    before = Ledger.of(algorithm.experiment).path.read_bytes()
    algorithm.run()
    assert Ledger.of(algorithm.experiment).path.read_bytes() == before


def copy_experiment(finished: Path, home: Path) -> Path:
    """A copy of the experiment's home `finished`, for tests that change it."""
    shutil.copytree(finished, home)
    return home


def finished_demo(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The home of `meta_harness_demo` run to its end, made once per test run (the modules that
    copy it share it, `tests/run_wide.py`): ledger [reject round 2, adopt round 1]."""
    return made_once(tmp_path_factory, worker_id, "meta-harness-demo", meta_harness_demo)
