"""The search's order, enforced by the algorithm itself: promotion and the sealed test only
when `next_step` says so, re-ranking until the test has run, frozen after it, and the test
split out of memory until the final step."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.base import Step, StepOrderError
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.algorithms.modular_rsi.run import ModularRSI
from flashrsi_dagster.algorithms.registry import algorithm_class, open_algorithm
from flashrsi_dagster.benchmarks.loading import load_splits
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import Status
from flashrsi_dagster.rollouts.engine import KeyRefused

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"


def _harness(tmp_path: Path, steps: int = 1) -> MetaHarness:
    config = load_config(
        EXAMPLE,
        [
            *("--experiment.home", str(tmp_path / "home")),
            *("--benchmark.limit", "4", "--algorithm.max_steps", str(steps)),
        ],
    )
    return open_algorithm(open_experiment(config), log=lambda _: None)  # type: ignore[return-value]


class _Zeroing:
    """The real benchmark, every answer marked wrong: a re-evaluation that scores 0."""

    def __init__(self, benchmark) -> None:
        self.inner, self.name = benchmark, benchmark.name

    def rollout(self, agent, task, *, split, attempt):
        real = self.inner.rollout(agent, task, split=split, attempt=attempt)
        return real.model_copy(update={"score": 0.0, "status": Status.FAILURE})

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_algorithms_are_opened_through_the_registry():
    assert algorithm_class("meta_harness") is MetaHarness
    assert algorithm_class("modular_rsi") is ModularRSI
    with pytest.raises(
        ValueError,
        match=r"unknown algorithm 'nope' \(known: best_of_n, dgm, evolver, meta_harness, mod",
    ):
        algorithm_class("nope")


def test_promotion_and_the_test_refuse_mid_search_and_write_nothing(tmp_path):
    harness = _harness(tmp_path, steps=2)
    harness.do(harness.next())  # round 0 only
    written = sorted(p.name for p in harness.layout.folder.iterdir())

    with pytest.raises(StepOrderError, match=r"round\(s\) 1, 2 of 0\.\.2 have no result yet"):
        harness.promote()
    with pytest.raises(StepOrderError, match="the sealed test refused"):
        harness.sealed_test()
    with pytest.raises(StepOrderError, match=r"round 2 refused: round\(s\) 1 have no result"):
        harness.edit(2)
    with pytest.raises(StepOrderError, match="nothing to do for done"):
        harness.do(Step("done"))

    assert sorted(p.name for p in harness.layout.folder.iterdir()) == written
    harness.close()


def test_the_test_split_is_not_in_memory_before_the_final_step(tmp_path):
    harness = _harness(tmp_path)
    harness.run(until="sealed_test")

    with pytest.raises(RuntimeError, match="not loaded during the search"):
        harness.splits.unseal_test()
    harness.do(harness.next())
    assert harness.read_state().test is not None
    harness.close()


def test_the_test_tasks_are_handed_out_on_the_sealed_tests_turn_only(tmp_path):
    harness = _harness(tmp_path)
    drawn = load_splits(harness.experiment.config.benchmark, harness.benchmark)

    with pytest.raises(StepOrderError, match=r"stays sealed: evaluate_seed \(round 0\) comes"):
        harness.unseal_test()
    harness.run(until="promote")
    with pytest.raises(StepOrderError, match="stays sealed: promote comes first"):
        harness.unseal_test()
    harness.do(harness.next())  # the promotion: now it is the sealed test's turn
    assert [t.id for t in harness.unseal_test()] == [t.id for t in drawn.unseal_test()]
    harness.do(harness.next())
    with pytest.raises(StepOrderError, match="stays sealed: done comes first"):
        harness.unseal_test()
    harness.close()


def test_a_changed_ranking_re_promotes_before_the_test_and_is_only_reported_after(tmp_path):
    logged: list[str] = []
    harness = _harness(tmp_path)
    harness.log = logged.append
    harness.run(until="sealed_test")
    first = harness.read_state().promotion
    real = harness.benchmark

    # The promoted round re-evaluated (a rematerialization) and now scores 0.
    harness.benchmark = _Zeroing(real)
    harness.evaluate_round(first.round, again=True)
    step = harness.next()
    assert step.action == "promote" and step.basis is not None
    again = harness.promote()
    assert again.round != first.round and again.ranking != first.ranking
    assert harness.next().action == "sealed_test"

    harness.benchmark = real
    harness.do(harness.next())  # the sealed test, of the new promotion
    tested = harness.read_state().test
    assert tested.snapshot_id == again.snapshot_id

    # After the test: the ranking changes again, the promotion stays, nothing is re-tested.
    harness.benchmark = _Zeroing(real)
    harness.evaluate_round(again.round, again=True)
    assert harness.next().action == "done"
    assert harness.promote() == harness.read_state().promotion == again
    assert any("promotion stays frozen" in line for line in logged)
    assert harness.sealed_test() == tested
    harness.close()


def test_an_endpoint_that_refuses_every_key_stops_the_search_before_the_sealed_test(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("FLASHRSI_TEST_TARGET_KEY", "sk-not-the-accepted-one")
    with OfflineModelServer(ServerConfig(accepted_keys=("sk-the-accepted-one",))) as server:
        config = load_config(
            EXAMPLE,
            [
                *("--experiment.home", str(tmp_path / "home"), "--benchmark.limit", "3"),
                *("--agent.llm.base_url", server.url),
                *("--agent.llm.api_key", "${FLASHRSI_TEST_TARGET_KEY}"),
            ],
        )
        harness = open_algorithm(open_experiment(config), log=lambda _: None)
        with pytest.raises(KeyRefused, match="refused the target role's key on every rollout"):
            harness.run()
        statuses = {r.status_code for r in server.requests}

    assert statuses == {401}  # every call was refused: not a harness's wrong answer
    state = harness.read_state()
    assert state.rounds == () and state.promotion is None and state.test is None
