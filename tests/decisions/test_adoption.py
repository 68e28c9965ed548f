"""The declared trade-off rule decides adoptions (`comparison.on_violation`): under `refuse`,
the default, a candidate that violates it is not adopted by any algorithm, and the refusal is a
ledger entry with its reason and the comparison; under `warn` it is adopted, the violation said.
Real experiments on the offline simulator."""

from __future__ import annotations

import pytest

from flashrsi_dagster.algorithms.modular_rsi.run import ModularRSI
from flashrsi_dagster.config import load_config
from flashrsi_dagster.config.comparison import ComparisonConfig
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.decisions.adoption import first_admitted
from tests.decisions.test_ledger import EXAMPLES, meta_harness_demo

# The demo's candidates use more tokens than the seed on the same tasks: a rule that allows
# no more tokens is violated by each of them.
NO_MORE_TOKENS = ("--comparison.guards.tokens.max_increase", "0")
MODULAR_SMALL = (  # one batch of 3 train tasks, one rollout, one edit: a merge all the same
    *("--algorithm.edit_budget", "1", "--algorithm.num_rollouts", "1"),
    *("--benchmark.split_counts.train", "3", "--benchmark.split_counts.test", "3"),
)


def test_refuse_is_the_default_and_says_so():
    assert ComparisonConfig().on_violation == "refuse"
    field = ComparisonConfig.model_fields["on_violation"]
    assert "`refuse` (the default)" in (field.description or "")


def test_meta_harness_refuses_candidates_that_violate_the_rule_and_keeps_the_seed(tmp_path):
    harness = meta_harness_demo(tmp_path, *NO_MORE_TOKENS)
    state, ledger = harness.read_state(), Ledger.of(harness.experiment)
    promotion, seed = state.promotion, state.round(0)

    assert promotion.snapshot_id == seed.snapshot_id  # both candidates outscored it
    refused = {f.candidate.round for f in promotion.refused}
    assert refused == {k for k, _, score in promotion.ranking if score > seed.dev_score}
    assert refused  # the demo's candidates do beat the seed on dev
    entries = ledger.entries()
    rejects = [e for e in entries if e.decision == "reject" and e.scope == "experiment"]
    assert len(rejects) == len(refused)
    for entry in rejects:
        assert entry.reason.startswith(f"adoption of round {entry.candidate.round}, c0")
        assert "violates" in entry.reason and "tokens" in entry.reason
        assert entry.evidence.comparison.verdict == "violates"
        assert entry.eval_set == "dev/e1" and entry.raw
    adopt = ledger.baseline()
    assert adopt.decision == "adopt" and adopt.candidate.snapshot_id == seed.snapshot_id
    assert "refused by the trade-off rule" in adopt.reason


def test_meta_harness_under_warn_adopts_the_violating_candidate_and_says_so(tmp_path):
    harness = meta_harness_demo(tmp_path, *NO_MORE_TOKENS, "--comparison.on_violation", "warn")
    promotion = harness.read_state().promotion

    adopt = Ledger.of(harness.experiment).baseline()
    assert promotion.round != 0 and not promotion.refused
    assert adopt.candidate.snapshot_id == promotion.snapshot_id
    assert "trade-off rule: violates" in adopt.reason


@pytest.mark.slow
def test_modular_rsi_refuses_a_merge_that_violates_the_rule_and_promotes_the_seed(tmp_path):
    from flashrsi_dagster.experiment import open_experiment

    args = ["--experiment.home", str(tmp_path), "--comparison.min_lift", "1", *MODULAR_SMALL]
    config = load_config(EXAMPLES / "modular_rsi.yaml", args)
    algorithm = ModularRSI(open_experiment(config), log=lambda _: None)
    state = algorithm.run()
    ledger = Ledger.of(algorithm.experiment)

    assert state.promotion.snapshot_id == algorithm.seed().id
    assert state.promotion.source == "seed" and "refused" in state.promotion.reason
    (found,) = state.promotion.refused
    refused = next(e for e in ledger.entries() if e.id == "modular_rsi/promotion/refused/1")
    assert refused.decision == "reject" and refused.scope == "experiment"
    assert refused.candidate.snapshot_id == found.candidate.snapshot_id != algorithm.seed().id
    assert refused.evidence.comparison.verdict == "violates"
    assert "score lift >= +1" in refused.reason
    assert "records/modular_rsi/baseline-check.jsonl" in refused.raw
    assert ledger.baseline().candidate.snapshot_id == algorithm.seed().id
    algorithm.experiment.records.verify()


def test_the_first_choice_not_refused_is_adopted_and_the_baseline_must_end_the_list():
    def vet(choice: str):
        return "refused" if choice.startswith("bad") else None

    assert first_admitted(["bad1", "bad2", "ok", "seed"], vet) == ("ok", ["refused"] * 2)
    with pytest.raises(ValueError, match="the baseline must end the list"):
        first_admitted(["bad1"], vet)


def _ranked_above(ranking, promoted: str) -> set[str]:
    ids = [row[-2] for row in ranking]
    return set(ids[: ids.index(promoted)])


@pytest.mark.slow
def test_best_of_n_refuses_samples_that_violate_the_rule(tmp_path):
    from flashrsi_dagster.algorithms.registry import open_algorithm
    from flashrsi_dagster.experiment import open_experiment

    args = ["--experiment.home", str(tmp_path), "--benchmark.limit", "4"]
    args += ["--algorithm.samples", "3", "--comparison.min_lift", "1"]
    search = open_algorithm(
        open_experiment(load_config(EXAMPLES / "best_of_n.yaml", args)), log=lambda _: None
    )
    state = search.run()
    promotion, seed = state.promotion, state.round(0)

    assert promotion.snapshot_id == seed.snapshot_id  # no sample lifts the score by 1
    refused = {f.candidate.snapshot_id for f in promotion.refused}
    assert refused == _ranked_above(promotion.ranking, seed.snapshot_id)
    entries = {e.candidate.snapshot_id: e for e in Ledger.of(search.experiment).entries()}
    for sid in refused:
        assert entries[sid].decision == "reject" and entries[sid].scope == "experiment"
        assert entries[sid].evidence.comparison.verdict == "violates"


@pytest.mark.slow
def test_dgm_refuses_members_that_violate_the_rule_when_the_seed_ran_on_dev(tmp_path):
    from flashrsi_dagster.algorithms.dgm.run import Dgm
    from flashrsi_dagster.experiment import open_experiment
    from tests.algorithms.dgm.test_run import SMALL

    args = ["--experiment.home", str(tmp_path), *SMALL, "--algorithm.dev_candidates", "3"]
    config = load_config(EXAMPLES / "dgm.yaml", [*args, "--comparison.min_lift", "1"])
    dgm = Dgm(open_experiment(config), log=lambda _: None)
    state = dgm.run()
    promotion, seed = state.promotion, state.candidate(0)

    assert seed.snapshot_id in {row[2] for row in promotion.ranking}  # the seed ran on dev
    assert promotion.snapshot_id == seed.snapshot_id
    refused = {f.candidate.snapshot_id for f in promotion.refused}
    assert refused == _ranked_above(promotion.ranking, seed.snapshot_id)
    for entry in Ledger.of(dgm.experiment).entries():
        if entry.candidate.snapshot_id in refused and entry.id.startswith("dgm/promotion/"):
            assert entry.decision == "reject" and entry.scope == "experiment"
            assert entry.reason.startswith("adoption of round")
