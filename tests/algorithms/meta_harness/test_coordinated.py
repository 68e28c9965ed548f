"""The coordinated proposer (`proposer: coordinated`): one Worker session a round writes all its
candidates, one folder each; the host commits and evaluates each folder on its own and rejects
a twin of a sibling, so a round costs at most k evaluations."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.meta_harness.config import MetaHarnessConfig
from flashrsi_dagster.algorithms.meta_harness.coordinated import folder_digest
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.llm.endpoints import offline_server
from flashrsi_dagster.rollouts.record import RolloutRecord
from tests.algorithms.meta_harness.test_run import DRIVERS, Driven

EXAMPLE = Path(__file__).parents[3] / "examples" / "meta_harness.yaml"
LIMIT = 6


def _config(tmp_path: Path, *overrides: str):
    return load_config(
        EXAMPLE,
        [
            *("--experiment.home", str(tmp_path / "home"), "--benchmark.limit", str(LIMIT)),
            *("--algorithm.proposer", "coordinated", "--algorithm.candidates_per_round", "3"),
            *overrides,
        ],
    )


def _run(tmp_path: Path, *overrides: str):
    harness = MetaHarness(open_experiment(_config(tmp_path, *overrides)), log=lambda _: None)
    return harness, harness.run()


def _rollouts(harness: MetaHarness, k: int, slot: str) -> int:
    path = harness.layout.rollouts(k, slot)
    return len(RolloutRecord(path, None).load()) if path.exists() else 0  # type: ignore[arg-type]


def test_the_default_follows_the_seed_one_session_a_candidate():
    worker = {"type": "miniagent", "llm": {"model": "m", "base_url": "offline"}}
    config = MetaHarnessConfig(name="meta_harness", worker=worker)
    assert config.proposer == "independent"


def test_the_digest_names_a_folders_content_and_leaves_the_history_out(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        (folder / "prompts").mkdir(parents=True)
        (folder / "prompts/system.md").write_text("rules\n")
    (a / ".history").mkdir()
    (a / ".history/index.json").write_text("{}")
    assert folder_digest(a) == folder_digest(b)
    os.symlink("/etc/passwd", b / "link")
    assert folder_digest(a) != folder_digest(b)
    (b / "link").unlink()
    (b / "prompts/system.md").write_text("rules!\n")
    assert folder_digest(a) != folder_digest(b)


@pytest.mark.slow
@DRIVERS
def test_one_session_writes_three_distinct_candidates_each_evaluated_once(tmp_path, how):
    driven = Driven(_config(tmp_path, "--algorithm.max_steps", "1"), how)
    harness, state = driven.harness, driven.state

    assert [(r.round, r.slot, r.status) for r in state.rounds] == [
        (0, "c0", "evaluated"),
        (1, "c0", "evaluated"),
        (1, "c1", "evaluated"),
        (1, "c2", "evaluated"),
    ]
    workers = {harness.layout.worker(1, s).read_text() for s in ("c0", "c1", "c2")}
    assert len(workers) == 1  # one session for the round, recorded for each candidate
    store = harness.experiment.snapshots
    trees = {store.get(r.snapshot_id).tree for r in state.rounds}
    assert len(trees) == 4  # the seed and three different candidates
    assert all(_rollouts(harness, 1, s) == LIMIT for s in ("c0", "c1", "c2"))  # k x one's cost
    assert state.promotion is not None and state.test is not None


@pytest.mark.slow
def test_a_twin_of_a_sibling_or_a_replaced_folder_is_rejected_and_not_evaluated(tmp_path):
    rule = "\\n- spam when the text mentions: prize\\n"
    offline_server().add_script(
        "mh-coordinated-twins",
        [
            {
                "tool_calls": [
                    {
                        "name": "shell",
                        "arguments": {"command": f"printf '{rule}' >> {s}/prompts/system.md"},
                    }
                    for s in ("c0", "c1")
                ]
                + [
                    {"name": "shell", "arguments": {"command": "echo stray > outside.txt"}},
                    {"name": "shell", "arguments": {"command": "rm -rf c2 && ln -s /etc c2"}},
                ]
            },
            {"text": "Candidate c0:\\nHypothesis: a prize rule\\nAxis of change: prompt"},
        ],
    )
    model = "simulator/script:mh-coordinated-twins"
    harness, state = _run(
        tmp_path, "--algorithm.max_steps", "1", "--algorithm.worker.llm.model", model
    )

    statuses = {r.slot: r.status for r in state.rounds if r.round == 1}
    assert statuses == {"c0": "evaluated", "c1": "rejected", "c2": "rejected"}
    assert "identical to candidate c0's folder" in state.round(1, "c1").reason
    assert "c2/ was replaced by a symlink" in state.round(1, "c2").reason  # never followed
    assert _rollouts(harness, 1, "c1") == _rollouts(harness, 1, "c2") == 0
    assert _rollouts(harness, 1, "c0") == LIMIT
    edit = json.loads(harness.layout.edit(1, "c0").read_text())
    assert edit["changed"] == ["M prompts/system.md"]  # nothing outside the folders is kept
