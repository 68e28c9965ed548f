"""Best-of-N on the real offline simulator, engine alone: N independent samples of the seed
that differ, each seeing only the seed and its train rollouts; the best on dev promoted, the
sealed test once; a budget matched to a real finished Meta-Harness experiment; the lift of
that experiment over its control; a control naming an experiment that is not there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.best_of_n.budget import fixed_budget
from flashrsi_dagster.algorithms.best_of_n.config import Budget
from flashrsi_dagster.algorithms.best_of_n.plan import rank
from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.controls.lift import control_lines, lift, lift_lines
from flashrsi_dagster.controls.spend import improvement, spend_by_role
from flashrsi_dagster.controls.stored import NoStoredExperiment, open_stored
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.orchestration import describe
from flashrsi_dagster.validation import dry_run

ROOT = Path(__file__).parents[3]
EXAMPLE = ROOT / "examples" / "best_of_n.yaml"
META_HARNESS = ROOT / "examples" / "meta_harness.yaml"
FLASHRSI = str(Path(sys.executable).parent / "flashrsi")
SMALL = ("--benchmark.limit", "4")


def _config(home: Path, *overrides: str, example: Path = EXAMPLE):
    return load_config(example, ["--experiment.home", str(home), *SMALL, *overrides])


def _run(config, until: str | None = None):
    algorithm = open_algorithm(open_experiment(config), log=lambda _: None)
    return algorithm, algorithm.run(until=until)


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    """Three samples of the seed, run to the sealed test."""
    return _run(_config(tmp_path_factory.mktemp("bon") / "home", "--algorithm.samples", "3"))


def test_n_samples_of_the_seed_differ_and_the_best_on_dev_is_promoted(sampled):
    search, state = sampled
    seed = state.round(0)

    assert [r.sample for r in state.samples] == [0, 1, 2]
    assert all(r.parent_id == seed.snapshot_id for r in state.samples)
    evaluated = [r for r in state.samples if r.status == "evaluated"]
    assert len(evaluated) >= 2
    assert len({r.snapshot_id for r in evaluated}) == len(evaluated)  # distinct edits
    assert state.promotion.snapshot_id == rank(state.rounds)[0][1]
    assert state.test.snapshot_id == state.promotion.snapshot_id
    for r in evaluated:
        assert search.layout.content(r.round, r.slot).is_file()  # checked before it was scored


def test_each_worker_is_told_its_sample_and_reads_only_the_seed_and_its_train_rollouts(sampled):
    search, state = sampled
    for r in state.samples:
        worker = json.loads(search.layout.worker(r.round, r.slot).read_text())
        instruction = worker["messages"][2]["content"]
        assert f"Sample: {r.sample} of 3" in instruction
        listing = next(m["content"] for m in worker["messages"] if m["role"] == "tool")
        shown = [line for line in listing.splitlines() if line.startswith(".history/")]
        assert shown and all(
            line.startswith((".history/rollouts/train/", ".history/seed/")) for line in shown
        )


def test_the_ledger_adopts_the_promotion_and_rejects_every_other_sample_with_evidence(sampled):
    search, state = sampled
    entries = Ledger.of(search.experiment).entries()

    adopted = [e for e in entries if e.decision == "adopt"]
    assert [e.candidate.snapshot_id for e in adopted] == [state.promotion.snapshot_id]
    rejected = {e.candidate.snapshot_id for e in entries if e.decision == "reject"}
    others = {r.snapshot_id for r in state.samples} - {state.promotion.snapshot_id}
    assert rejected == others
    compared = [e for e in entries if e.evidence.paired is not None]
    assert compared and all(e.evidence.paired["n"] == 4 for e in compared)


def test_resuming_a_finished_control_does_nothing(sampled):
    search, _ = sampled
    head = (search.experiment.paths.records / "chain.head").read_text()

    _run(search.experiment.config)

    assert (search.experiment.paths.records / "chain.head").read_text() == head


@pytest.fixture(scope="module")
def matched(tmp_path_factory):
    """A finished Meta-Harness experiment (one Worker step) and its budget-matched control."""
    home = tmp_path_factory.mktemp("matched") / "home"
    searched, _ = _run(_config(home, "--algorithm.max_steps", "1", example=META_HARNESS))
    name = searched.experiment.config.experiment.name
    control, state = _run(_config(home, "--algorithm.matches", name, "--algorithm.samples", "8"))
    return searched, control, state


def test_the_control_spends_the_worker_budget_the_search_spent(matched):
    searched, control, state = matched
    worker = json.loads((searched.layout.worker(1)).read_text())["usage"]
    budget = state.budget

    assert budget.matches == searched.experiment.config.experiment.name
    assert budget.model_calls == worker["model_calls"]
    assert budget.tokens == worker["input_tokens"] + worker["output_tokens"]
    assert budget.matched_search_over is True
    assert state.spent.model_calls >= budget.model_calls  # it stopped once it was spent...
    before_last = state.spent.model_calls - state.samples[-1].spend.model_calls
    assert before_last < budget.model_calls  # ...and not before
    assert len(state.samples) < 8
    lines = control.summary(state)
    assert any(line.startswith("matched: meta-harness-demo spent") for line in lines)
    assert any("sampling stopped: the budget is spent" in line for line in lines)


def test_the_gateway_log_and_the_worker_trajectories_count_the_same_spend(matched):
    searched, _, _ = matched
    by_role = spend_by_role(searched.experiment.paths.gateway_log, "meta-harness-demo")
    worker = json.loads((searched.layout.worker(1)).read_text())["usage"]

    assert set(by_role) == {"target", "worker"}
    assert improvement(by_role).model_calls == worker["model_calls"]


def test_the_lift_over_the_control_is_paired_per_dev_task_and_per_test_task(matched):
    searched, control, _ = matched

    result = lift(searched.experiment, control.experiment)

    assert result.dev.paired is not None and result.dev.paired.n == 4
    assert result.test.paired is not None and result.test.paired.n == 4
    assert result.dev.paired.verdict in {"credited", "regressed", "indecisive"}
    assert lift_lines(result)[0] == "lift over the control best-of-n-demo:"


def test_the_test_lift_waits_for_both_sealed_tests(tmp_path):
    home = tmp_path / "home"
    untested, _ = _run(_config(home, "--algorithm.samples", "1"), until="sealed_test")
    mh, _ = _run(_config(home, "--algorithm.max_steps", "1", example=META_HARNESS))

    result = lift(mh.experiment, untested.experiment)

    assert result.dev.paired is not None
    assert result.test.paired is None
    assert result.test.not_compared == (
        "best-of-n-demo has not run its sealed test: the test split stays sealed"
    )
    assert not untested.layout.test_rollouts.exists()  # nothing was unsealed to compare


def test_a_summary_names_its_control_from_the_config(matched):
    searched, _, _ = matched
    config = searched.experiment.config.model_copy(deep=True)
    config.experiment.control = "best-of-n-demo"

    lines = control_lines(open_experiment(config))

    assert lines[0] == "lift over the control best-of-n-demo:"
    assert lines[1].startswith("  dev: ") and "permutation p" in lines[1]
    shown = describe.control(open_experiment(config))["lift_over_control"].value
    assert shown == "\n".join(lines)  # in every algorithm's Dagster summary too
    assert control_lines(searched.experiment) == []  # no control named, nothing said


def test_a_budget_key_given_overrides_the_matched_one(matched):
    searched, control, _ = matched
    config = control.experiment.config.model_copy(deep=True)
    config.algorithm.budget = Budget(tokens=0)

    fixed = fixed_budget(config.algorithm, searched.experiment.paths.root.parent)

    assert fixed.tokens == 0  # 0 is nothing, not "no cap"
    assert fixed.model_calls == control.read_state().budget.model_calls


def test_with_shown_dev_each_worker_reads_the_seeds_dev_rollouts(tmp_path):
    search, _ = _run(
        _config(tmp_path / "home", "--algorithm.samples", "1", "--algorithm.shown", "dev")
    )

    worker = json.loads(search.layout.worker(1, "c0").read_text())
    listing = next(m["content"] for m in worker["messages"] if m["role"] == "tool")
    assert ".history/rollouts/dev/" in listing and "rollouts/train" not in listing
    assert not search.layout.rollouts(0, "c0", "train").exists()  # train is never run


def test_matching_an_experiment_that_is_not_there_names_the_key(tmp_path):
    config = _config(tmp_path / "home", "--algorithm.matches", "nope")

    problems = dry_run(config)

    said = f"algorithm.matches: no experiment 'nope' under {tmp_path / 'home'} to match the "
    assert said + "budget of (experiments there: none)" in problems
    with pytest.raises(NoStoredExperiment, match=r"^algorithm\.matches: no experiment 'nope'"):
        fixed_budget(config.algorithm, tmp_path / "home")


def test_flashrsi_run_refuses_it_and_writes_nothing(tmp_path):
    home = tmp_path / "home"
    args = ["run", "--config", str(EXAMPLE), "--experiment.home", str(home)]

    result = subprocess.run(
        [FLASHRSI, *args, *SMALL, "--algorithm.matches", "nope"],
        capture_output=True, text=True, cwd=ROOT, env=os.environ, timeout=600,
    )  # fmt: skip

    assert result.returncode == 2
    assert "error: algorithm.matches: no experiment 'nope'" in result.stderr
    assert not (home / "best-of-n-demo").exists()


def test_flashrsi_compare_names_a_control_that_is_not_there(matched):
    searched, _, _ = matched
    home = searched.experiment.paths.root.parent
    args = ["compare", "--experiment", "meta-harness-demo", "--control", "nope"]

    result = subprocess.run(
        [FLASHRSI, *args, "--home", str(home)],
        capture_output=True, text=True, cwd=ROOT, env=os.environ, timeout=600,
    )  # fmt: skip

    assert result.returncode == 2
    assert result.stderr.startswith("error: --control: no experiment 'nope' under ")
    with pytest.raises(NoStoredExperiment, match=r"^experiment\.control: no experiment"):
        open_stored(home, "nope", "experiment.control")
