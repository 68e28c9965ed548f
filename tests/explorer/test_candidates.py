"""The candidate tree read from real experiments' records: one model for every algorithm,
every ledger decision a node, parents from the snapshot store, the sealed test only once run."""

from __future__ import annotations

from pathlib import Path

from flashrsi_dagster.decisions.ledger import Ledger
from flashrsi_dagster.explorer.candidates import candidate_tree
from flashrsi_dagster.explorer.home import algorithm_of, experiment_names, experiment_paths
from flashrsi_dagster.explorer.records import node_decisions, node_records, trajectories
from flashrsi_dagster.snapshots import SnapshotStore
from tests.explorer.conftest import DEMOS, make_experiment


def _tree(home: Path, name: str):
    paths = experiment_paths(home, name)
    return paths, candidate_tree(paths, algorithm_of(paths))


def test_every_experiment_of_the_home_is_found_by_name(demo_home):
    assert experiment_names(demo_home) == sorted(DEMOS)
    assert algorithm_of(experiment_paths(demo_home, "dgm-demo")) == "dgm"


def test_each_ledger_decision_is_a_node_with_its_outcome_and_score(demo_home):
    outcomes = set()
    for name in DEMOS:
        paths, tree = _tree(demo_home, name)
        entries = Ledger(paths.root).entries()
        by_id = {n.id: n for n in tree.nodes}
        for entry in entries:
            node = by_id[entry.candidate.snapshot_id]
            assert entry.id in node.decisions
            assert node.round == entry.candidate.round
        adopted = [e for e in entries if e.scope == "experiment" and e.decision == "adopt"]
        assert by_id[adopted[-1].candidate.snapshot_id].outcome == "promoted"
        assert tree.baseline == adopted[-1].candidate.snapshot_id
        rejected = {e.candidate.snapshot_id for e in entries if e.decision == "reject"}
        rejected -= {e.candidate.snapshot_id for e in entries if e.decision == "adopt"}
        assert all(by_id[s].outcome == "rejected" and by_id[s].reason for s in rejected)
        outcomes |= {n.outcome for n in tree.nodes}
        assert any(n.score is not None for n in tree.nodes)
    assert outcomes == {"promoted", "adopted", "rejected", "archived", "seed"}


def test_a_modular_rsi_branch_adopted_is_adopted_for_its_module(demo_home):
    paths, tree = _tree(demo_home, "modular-rsi-demo")
    branches = {(e.candidate.snapshot_id, e.scope) for e in Ledger(paths.root).entries()
                if e.decision == "adopt" and e.scope.startswith("branch:")}  # fmt: skip
    assert branches
    for snapshot_id, scope in branches:
        node = next(n for n in tree.nodes if n.id == snapshot_id)
        assert node.outcome == "adopted" and node.scope == scope
        assert scope == f"branch:{node.slot}"


def test_parents_are_the_snapshot_store_s_and_every_edge_ends_at_a_node(demo_home):
    for name in DEMOS:
        paths, tree = _tree(demo_home, name)
        store = SnapshotStore(paths.snapshots)
        ids = {n.id for n in tree.nodes}
        roots = [n for n in tree.nodes if n.parent is None]
        assert [n.outcome for n in roots] in (["seed"], ["promoted"])  # one seed, maybe promoted
        for node in tree.nodes:
            assert node.parent == store.get(node.snapshot_id).parent_id
            assert node.parent is None or node.parent in ids


def test_the_meta_harness_tree_scores_rounds_and_labels_the_sealed_test(demo_home):
    _, tree = _tree(demo_home, "meta-harness-demo")
    assert sorted(n.round for n in tree.nodes) == [0, 1, 2]
    assert all(n.score is not None and 0 <= n.score <= 1 for n in tree.nodes)
    assert tree.sealed_test is not None and tree.sealed_test.snapshot_id == tree.baseline
    promoted = next(n for n in tree.nodes if n.id == tree.baseline)
    assert promoted.sealed_test == tree.sealed_test.score
    assert [n.sealed_test for n in tree.nodes if n.id != tree.baseline] == [None, None]


def test_a_candidate_s_records_hold_its_worker_run_and_every_target_rollout(demo_home):
    paths, tree = _tree(demo_home, "best-of-n-demo")
    sample = next(n for n in tree.nodes if n.round == 1)
    files = node_records(paths, node_decisions(Ledger(paths.root).entries(), sample.id))
    found = trajectories(paths, files, public_test=True)

    assert [t["task_id"] for t in found["worker"]] and found["worker"][0]["split"] is None
    assert found["worker"][0]["entries"][0]["role"] == "run_config"
    assert len(found["target"]) == 4 and {t["split"] for t in found["target"]} == {"dev"}
    worker_tokens = found["worker"][0]["usage"]["input_tokens"]
    assert found["tokens"]["worker"]["input_tokens"] == worker_tokens > 0
    assert found["tokens"]["target"]["runs"] == 4
    assert all(p.is_relative_to(paths.records) for p in files)
    assert not any("round-002" in p.name for p in files)  # another sample's records


def test_a_dgm_candidate_admitted_to_the_archive_is_archived_though_not_promoted(demo_home):
    paths, tree = _tree(demo_home, "dgm-demo")
    entries = Ledger(paths.root).entries()
    admitted = {e.candidate.snapshot_id for e in entries if e.scope == "archive"
                and e.decision == "adopt"}  # fmt: skip
    generation = [n for n in tree.nodes if n.round == 1]

    assert {n.slot for n in generation} == {"c0", "c1"}
    for node in generation:
        if node.id in admitted:
            assert node.outcome == "archived"
            assert len(node.decisions) == 2  # admitted, then not promoted: both listed
        else:
            assert node.outcome == "rejected" and "not admitted" in node.reason
    promoted = next(n for n in tree.nodes if n.outcome == "promoted")
    assert promoted.score is not None  # the seed's score, from the evidence it was compared by


def test_the_sealed_test_is_not_shown_before_it_has_run(tmp_path):
    example, *overrides = DEMOS["best-of-n-demo"]
    searched = make_experiment(tmp_path / "home", example, *overrides, until="sealed_test")
    paths, tree = _tree(tmp_path / "home", searched.experiment.config.experiment.name)

    assert tree.sealed_test is None
    assert all(n.sealed_test is None for n in tree.nodes)
    entries = Ledger(paths.root).entries()
    for node in tree.nodes:
        files = node_records(paths, node_decisions(entries, node.id))
        found = trajectories(paths, files, public_test=tree.sealed_test is not None)
        assert all(t["split"] != "test" for t in found["target"])


def test_meta_harness_frontier_tests_label_their_nodes_and_the_promoted_test_stays_the_result(
    tmp_path,
):
    overrides = ("--algorithm.max_steps", "2", "--benchmark.limit", "9")
    made = make_experiment(
        tmp_path / "home",
        "meta_harness.yaml",
        *overrides,
        "--algorithm.sealed_test_frontier",
        "true",
    )
    state = made.read_state()
    _, tree = _tree(tmp_path / "home", made.experiment.config.experiment.name)

    assert state.frontier_tests  # there are frontier members besides the promoted one
    assert tree.sealed_test.snapshot_id == state.test.snapshot_id == tree.baseline
    assert tree.sealed_test.score == state.test.test_score
    scores = {n.id: n.sealed_test for n in tree.nodes}
    assert all(scores[t.snapshot_id] == t.test_score for t in state.frontier_tests)
