"""Several initial harnesses (`algorithm.initial_harnesses`, the paper's baselines): each is a
round-0 candidate evaluated on dev, all are in the Worker's history, and the best on dev is the
checkout every later candidate is written in."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.algorithms.meta_harness.history import HistoryView
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.config import load_config
from flashrsi_dagster.config.errors import ConfigError
from flashrsi_dagster.decisions.ledger import Ledger
from flashrsi_dagster.experiment import open_experiment
from tests.algorithms.meta_harness.test_run import DRIVERS, EXAMPLE, Driven, _config

RULE = "- malicious when the text mentions: command, decode, encoded\n"
"""A keyword rule the demo's Worker itself writes in round 2: a better harness than the seed."""


def _harness(tmp_path: Path, name: str, rule: str = RULE) -> Path:
    folder = tmp_path / name
    shutil.copytree(HARNESS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    with (folder / "prompts" / "system.md").open("a") as prompt:
        prompt.write(rule)
    return folder


def _worker_told(driven: Driven, k: int = 1) -> str:
    """The instruction round k's Worker was given, as one line."""
    trajectory = json.loads(driven.layout.worker(k, "c0").read_text())
    said = next(m["content"] for m in trajectory["messages"] if m["role"] == "user")
    return " ".join(said.split())


@DRIVERS
def test_every_initial_harness_is_a_round_0_candidate_and_the_best_is_built_on(tmp_path, how):
    better = _harness(tmp_path, "better")
    config = _config(
        tmp_path, "--algorithm.max_steps", "1", "--algorithm.initial_harnesses", f'["{better}"]'
    )

    driven = Driven(config, how)
    state, store = driven.state, driven.experiment.snapshots

    seed, other = state.round(0, "c0"), state.round(0, "c1")
    assert seed.status == other.status == "evaluated"
    assert seed.parent_id is None and other.parent_id is None  # both roots: initial harnesses
    assert other.dev_score > seed.dev_score
    assert RULE in store.read_file_at(other.snapshot_id, "prompts/system.md").decode()
    child = state.round(1)
    assert child.parent_id == other.snapshot_id  # written in the best initial harness's checkout
    assert RULE.strip() in store.read_file_at(child.snapshot_id, "prompts/system.md").decode()
    told = _worker_told(driven)  # what the Worker is told it edits is what it edits
    assert "fresh copy of the seed" not in told
    start = f"round 0's candidate c1, snapshot {other.snapshot_id}"
    assert (
        f"a fresh copy of the initial harness that scored best on dev, not the seed: {start}"
        in told
    )
    assert state.promotion is not None and state.test is not None
    # The Worker's history has both initial harnesses, with their scores.
    view = HistoryView.for_experiment(store, driven.layout, "c0")
    try:
        index = json.loads((view.update(list(state.rounds)) / "index.json").read_text())
    finally:
        view.discard()
    listed = json.dumps(index)
    assert seed.snapshot_id in listed and other.snapshot_id in listed
    assert "round 0 c1: evaluated" in "\n".join(driven.harness.summary(state))
    # In the ledger, the other initial harness is a candidate like any other: adopted, or
    # rejected as not promoted, compared with the seed; the seed is the baseline.
    entries = Ledger.of(driven.experiment).entries()
    about = [e for e in entries if (e.candidate.round, e.candidate.slot) == (0, "c1")]
    promoted = state.promotion.snapshot_id == other.snapshot_id
    assert [e.decision for e in about] == ["adopt" if promoted else "reject"]
    assert about[0].baseline.snapshot_id == seed.snapshot_id
    assert not any("no candidate beat the seed" in e.reason for e in entries)


def test_an_initial_harness_with_the_seeds_files_is_rejected_unevaluated(tmp_path):
    same = _harness(tmp_path, "same", rule="")
    config = _config(
        tmp_path, "--algorithm.max_steps", "1", "--algorithm.initial_harnesses", f'["{same}"]'
    )

    driven = Driven(config, "engine")

    twin = driven.state.round(0, "c1")
    assert (twin.status, twin.reason) == ("rejected", "the same harness as round 0")
    assert not driven.layout.rollouts(0, "c1").exists()  # nothing evaluated
    assert driven.state.round(1).parent_id == driven.state.round(0).snapshot_id
    assert "is a fresh copy of the seed harness: edit it in place" in _worker_told(driven)
    entry = next(e for e in Ledger.of(driven.experiment).entries() if e.id.endswith("r000.c1"))
    assert entry.decision == "reject"
    assert entry.reason == "the initial harness was not evaluated: the same harness as round 0"


def test_one_seed_by_default(tmp_path):
    harness = MetaHarness(open_experiment(_config(tmp_path)), log=lambda _: None)  # nothing runs
    assert harness.seeds == ("c0",)
    assert [ks for ks in harness.round_slots() if ks[0] == 0] == [(0, "c0")]


@pytest.mark.parametrize(
    ("folder", "expected"),
    [("missing", "folder does not exist"), ("empty", "harness folder has no components.yaml")],
)
def test_a_bad_initial_harness_folder_is_refused_naming_its_key(tmp_path, folder, expected):
    (tmp_path / "empty").mkdir()
    good = _harness(tmp_path, "good")
    folders = json.dumps([str(good), str(tmp_path / folder)])

    with pytest.raises(ConfigError) as refused:
        load_config(EXAMPLE, ["--algorithm.initial_harnesses", folders])
    problems = [line for line in str(refused.value).splitlines() if "initial_harnesses" in line]
    assert len(problems) == 1  # the good folder passes; the bad one is named by its key path
    assert problems[0].strip().startswith("algorithm.initial_harnesses.1 ")
    assert problems[0].endswith(f"{expected}: {tmp_path / folder}")
