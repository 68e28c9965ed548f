"""Forks: a new experiment whose seed is a candidate of another one, on real git stores; the
lineage recorded; unknown origins and candidates refused in one line; the origin's sealed
test kept out of the fork's search."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.cli import EXIT_BAD_INPUT, main
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.experiment.fork import FORKED_FROM, ForkError, fork_overrides, pinned
from flashrsi_dagster.validation import dry_run
from tests.experiment.origins import EXAMPLE, config_at, origin


def _fork(home: Path, name: str, *overrides: str):
    return pinned(config_at(home, name, *overrides))


def _seed_of(config):
    algorithm = open_algorithm(open_experiment(config), log=lambda _: None)
    try:
        return algorithm.seed()
    finally:
        algorithm.close()


def test_a_forks_seed_is_the_chosen_candidates_tree_with_its_origin_recorded(tmp_path):
    home = tmp_path / "home"
    _, seed, child = origin(home, "origin")

    config = _fork(home, "fork", *fork_overrides("origin", "r001.c0"))
    forked = _seed_of(config)
    origin_files = open_experiment(config_at(home, "origin")).snapshots.files(seed)

    assert config.experiment.fork.snapshot == child.id  # pinned in the fork's identity
    meta = json.loads((home / "fork" / "run_meta.json").read_text())
    assert meta["config"]["experiment"]["fork"]["snapshot"] == child.id
    assert forked.tree == child.tree and forked.parent_id is None  # a root: the fork's seed
    assert forked.id != child.id  # a commit of the fork's own store
    assert forked.metadata[FORKED_FROM] == {
        "experiment": "origin",
        "candidate": "r001.c0",
        "snapshot": child.id,
        "tree": child.tree,
        "root": seed.id,  # the lineage's root, kept: the contamination check's baseline
    }
    store = open_experiment(config).snapshots
    assert store.root_files(seed.id) == origin_files
    shutil.rmtree(home / "origin")  # made once: the fork no longer needs its origin
    assert _seed_of(config).id == forked.id
    assert not [p for p in dry_run(config) if "fork" in p]  # a resume is not refused


def test_baseline_names_the_origins_adopted_snapshot_and_else_its_seed(tmp_path):
    home = tmp_path / "home"
    _, _, child = origin(home, "adopted")
    _, seed, _ = origin(home, "nothing-adopted", adopt=False)

    assert _fork(home, "a", *fork_overrides("adopted")).experiment.fork.snapshot == child.id
    refused = _fork(home, "b", *fork_overrides("nothing-adopted")).experiment.fork
    assert refused.snapshot == seed.id
    by_id = _fork(home, "c", *fork_overrides("adopted", child.id[:10])).experiment.fork
    assert by_id.snapshot == child.id


@pytest.mark.parametrize(
    ("origin_name", "candidate", "message"),
    [
        ("elsewhere", "r001.c0", "no experiment 'elsewhere' under .* there: origin\\)"),
        ("origin", "r007.c0", "has no candidate 'r007.c0' .* \\(its candidates: r000.c0, r001.c0"),
        ("origin", "deadbeef00", "neither a candidate key .* nor a snapshot of experiment"),
    ],
)
def test_an_unknown_origin_or_candidate_is_refused_in_one_line(
    tmp_path, origin_name, candidate, message
):
    home = tmp_path / "home"
    origin(home, "origin")

    with pytest.raises(ForkError, match=message):
        _fork(home, "fork", *fork_overrides(origin_name, candidate))
    assert not (home / "fork").exists()


def test_flashrsi_fork_refuses_a_path_an_unknown_candidate_and_itself_writing_nothing(
    tmp_path, capsys
):
    home = tmp_path / "home"
    origin(home, "origin")
    base = ["--config", str(EXAMPLE), "--experiment.home", str(home)]

    for argv, said in [
        (["--from", "../origin", "--experiment.name", "f"], "--from: expected an experiment name"),
        (["--from", "origin", "--candidate", "r009.c0", "--experiment.name", "f"], "r009.c0"),
        (["--from", "origin", "--experiment.name", "origin"], "cannot fork itself"),
    ]:
        assert main(["fork", *argv, *base]) == EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in home.iterdir()) == ["origin"]


def rows(*specs: tuple[str, str]) -> str:
    return "".join(
        json.dumps({"id": i, "text": f"text of {i}", "label": "benign", "split": split}) + "\n"
        for i, split in specs
    )


def test_the_origins_sealed_test_never_reaches_the_forks_train_or_dev(tmp_path):
    home, data = tmp_path / "home", tmp_path / "data.jsonl"
    data.write_text(rows(("a", "train"), ("b", "dev"), ("c", "dev"), ("d", "test"), ("e", "test")))
    origin(home, "origin", "--benchmark.data_path", str(data))
    moved = tmp_path / "moved.jsonl"  # the fork's data: a test task of the origin's in dev
    moved.write_text(rows(("a", "train"), ("b", "dev"), ("d", "dev"), ("c", "test"), ("e", "test")))
    fork = fork_overrides("origin")

    same = _fork(home, "same", *fork, "--benchmark.data_path", str(data))
    leaking = _fork(home, "leaking", *fork, "--benchmark.data_path", str(moved))

    assert not [p for p in dry_run(same) if "sealed test" in p]
    problems = [p for p in dry_run(leaking) if "sealed test of experiment 'origin'" in p]
    assert len(problems) == 1 and "1 task(s) of the train/dev splits" in problems[0]
    assert "'d'" not in problems[0] and " d " not in problems[0]  # counted, not named
