"""Meta-Harness on the offline simulator: the seed's own loop, rejections, aborts, resume.

The behaviour tests run twice: on the engine alone, and through a real Dagster instance
(`instance_for_test`, one in-process run of the round assets per step, as `flashrsi run`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flashrsi_dagster import scratch
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.algorithms.meta_harness.evolve import evolve
from flashrsi_dagster.algorithms.meta_harness.plan import rank
from flashrsi_dagster.algorithms.meta_harness.records import RoundRecord
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.benchmarks.loading import load_splits
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.llm.endpoints import offline_server
from flashrsi_dagster.rollouts.record import RolloutRecord

EXAMPLE = Path(__file__).parents[3] / "examples" / "meta_harness.yaml"


def _config(tmp_path: Path, *overrides: str):
    return load_config(
        EXAMPLE, ["--experiment.home", str(tmp_path / "home"), "--benchmark.limit", "6", *overrides]
    )


class Driven:
    """An experiment run to its end by `how`; what the tests look at afterwards."""

    def __init__(self, config, how: str) -> None:
        self.harness = MetaHarness(open_experiment(config), log=lambda _: None)
        if how == "engine":
            self.state = self.harness.run()
        else:
            self.state = _through_dagster(config)
        self.layout, self.experiment = self.harness.layout, self.harness.experiment


def _through_dagster(config):
    import dagster as dg

    from flashrsi_dagster.deployment.cli_driver import drive_on

    with dg.instance_for_test() as instance:
        state = drive_on(instance, open_experiment(config), say=lambda _: None)
        promotion = dg.AssetKey(["meta_harness", "promotion"])
        materialized = instance.get_materialized_partitions(promotion)
    assert (config.experiment.name in materialized) == (state.promotion is not None)
    return state


DRIVERS = pytest.mark.parametrize("how", ["engine", "dagster"])


def _lines(path: Path) -> int:
    return len(RolloutRecord(path, None).load()) if path.exists() else 0  # type: ignore[arg-type]


@DRIVERS
def test_the_demo_improves_promotes_the_best_and_tests_once(tmp_path, how):
    config = _config(tmp_path, "--algorithm.max_steps", "2")
    server = offline_server()
    first_request = len(server.requests)

    driven = Driven(config, how)
    state, harness = driven.state, driven.harness

    scores = [r.dev_score for r in state.rounds]
    assert [r.status for r in state.rounds] == ["evaluated"] * 3
    assert max(scores) > scores[0]  # the Worker's edits really helped on dev
    assert all(r.dev_input_tokens and r.dev_output_tokens for r in state.rounds)
    frontier = "frontier (dev x context tokens): "
    assert any(line.startswith(frontier) for line in harness.summary(state))
    best = max(range(3), key=lambda k: (scores[k], -k))
    assert state.promotion.round == best
    assert state.test.snapshot_id == state.promotion.snapshot_id
    layout = harness.layout
    dev = sum(_lines(layout.rollouts(k)) for k in range(3))
    assert dev == 6 * (1 + 2)  # N x (1 + max_steps), no more
    test_split = load_splits(config.benchmark, harness.benchmark).unseal_test()
    assert _lines(layout.test_rollouts) == state.test.test_tasks == len(test_split)
    snapshots = harness.experiment.snapshots.history()
    assert all(s.parent_id == snapshots[0].id for s in snapshots[1:])  # children of the seed
    # The server saw it too (the demo target answers in one request): one request per rollout,
    # the test split's all after the last dev rollout ended.
    starts = [r for r in server.requests[first_request:] if r.role == "target"]
    test_ids = {t.id for t in test_split}
    tested = [t for t in RolloutRecord(layout.test_rollouts, None).load() if t.task_id in test_ids]
    assert len(tested) == len(test_ids) == state.test.test_tasks
    assert len(starts) == dev + len(test_ids)
    test_started = min(t.started for t in tested)
    dev_ended = max(
        t.started.timestamp() + t.duration
        for k in range(3)
        for t in RolloutRecord(layout.rollouts(k), None).load()
    )
    assert test_started.timestamp() >= dev_ended
    assert sum(r.time >= test_started for r in starts) == len(test_ids)


def _worker_script(name: str, replies: list[dict]) -> str:
    offline_server().add_script(name, replies)
    return f"simulator/script:{name}"


def _shell(command: str) -> dict:
    return {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


@DRIVERS
def test_noop_and_illegal_edits_use_up_their_step_and_later_history_shows_them(tmp_path, how):
    model = _worker_script(
        f"mh-steps-{how}",
        [
            {"text": "nothing to change"},  # step 1: no-op
            _shell("echo scratch > notes.txt"),
            {"text": "added notes"},  # step 2: refused
            _shell("find .history -type f | sort; cat .history/index.json"),  # step 3: reads
            _shell(
                "printf '\\n- malicious when the text mentions: ignore\\n' >> prompts/system.md"
            ),
            {"text": "added a rule"},
        ],
    )
    config = _config(tmp_path, "--algorithm.max_steps", "3", "--algorithm.worker.llm.model", model)

    driven = Driven(config, how)
    state, harness = driven.state, driven.harness

    statuses = [(r.round, r.status) for r in state.rounds]
    assert statuses == [(0, "evaluated"), (1, "rejected"), (2, "rejected"), (3, "evaluated")]
    assert "identical to the parent" in state.rounds[1].reason
    assert "notes.txt: not a declared component file" in state.rounds[2].reason
    assert _lines(harness.layout.rollouts(1)) == _lines(harness.layout.rollouts(2)) == 0
    refused = json.loads(harness.layout.edit(2).read_text())["refused_diff"]
    assert "+++ b/notes.txt" in refused and "+scratch" in refused  # its code, for later Workers
    assert json.loads(harness.layout.edit(1).read_text())["refused_diff"] is None
    worker = json.loads(harness.layout.worker(3).read_text())
    listing = next(m["content"] for m in worker["messages"] if m["role"] == "tool")
    seed = state.rounds[0].snapshot_id
    assert ".history/trajectories/round-000/dev/" in listing
    assert ".history/trajectories/round-001/edit.json" in listing  # the rejections are readable
    assert ".history/trajectories/round-002/round.json" in listing
    assert f".history/snapshots/{seed[:12]}/prompts/system.md" in listing
    assert f'"{seed}"' in listing  # index.json maps the id to its folder
    store = harness.experiment.snapshots
    files = store._git("ls-tree", "-r", "--name-only", state.rounds[3].snapshot_id).split()
    assert not any(f.startswith(".history") for f in files)


@DRIVERS
def test_a_worker_failure_aborts_and_keeps_the_error_trajectory(tmp_path, how):
    model = _worker_script(f"mh-fail-{how}", [{"error": 500}] * 6)
    config = _config(
        tmp_path,
        "--algorithm.max_steps",
        "3",
        "--algorithm.worker.llm.model",
        model,
        "--algorithm.worker.llm.max_retries",
        "0",
    )
    driven = Driven(config, how)
    state, harness = driven.state, driven.harness

    assert [r.status for r in state.rounds] == ["evaluated", "worker_failed"]
    assert harness.next().action == "aborted"
    assert state.promotion is None and state.test is None
    worker = json.loads(harness.layout.worker(1).read_text())
    assert worker["status"] == "infra_error" and worker["error"]["type"]


def test_ties_keep_the_earlier_snapshot():
    rounds = [
        RoundRecord(round=k, status="evaluated", snapshot_id=f"s{k}", dev_score=score)
        for k, score in enumerate([0.5, 0.75, 0.75, 0.25])
    ]
    rounds.append(RoundRecord(round=4, status="rejected"))

    assert rank(rounds) == [(1, "s1", 0.75), (2, "s2", 0.75), (0, "s0", 0.5), (3, "s3", 0.25)]


def test_a_restart_continues_without_repeating_finished_rounds(tmp_path):
    config = _config(tmp_path, "--algorithm.max_steps", "1")
    first = MetaHarness(open_experiment(config), log=lambda _: None)
    first.do(first.next())  # round 0 only, then "crash"
    first.close()
    seed_rollouts = first.layout.rollouts(0).read_text()

    state = MetaHarness(open_experiment(config), log=lambda _: None).run()

    assert [r.round for r in state.rounds] == [0, 1]
    assert first.layout.rollouts(0).read_text() == seed_rollouts
    assert state.test is not None


def test_evolve_runs_in_a_temporary_folder_and_removes_it(tmp_path):
    before = set(scratch.process_dir().glob("evolve-*"))

    state = evolve(_config(tmp_path, "--algorithm.max_steps", "1"), log=lambda _: None)

    assert state.test is not None
    assert set(scratch.process_dir().glob("evolve-*")) == before
    assert not (tmp_path / "home").exists()


def test_evolve_cleans_up_when_it_fails(tmp_path):
    before = set(scratch.process_dir().glob("evolve-*"))
    config = _config(
        tmp_path,
        "--benchmark.split_counts.dev",
        "0",
        "--benchmark.split_counts.train",
        "0",
        "--benchmark.split_counts.test",
        "1",
    )

    with pytest.raises(Exception, match="dev split is empty"):
        evolve(config, log=lambda _: None)
    assert set(scratch.process_dir().glob("evolve-*")) == before


def test_a_re_evaluated_round_0_keeps_its_seed_when_the_harness_folder_changed(tmp_path):
    source = tmp_path / "harness"
    shutil.copytree(HARNESS, source)
    config = _config(tmp_path, "--algorithm.max_steps", "1", "--agent.source_dir", str(source))
    harness = MetaHarness(open_experiment(config), log=lambda _: None)
    first = harness.evaluate_seed()
    (source / "prompts" / "system.md").write_text("an edit made after round 0\n")

    harness.restart_round(0)  # as a rematerialization from the UI does
    again = harness.evaluate_seed()
    harness.close()

    assert again.snapshot_id == first.snapshot_id
    assert len(harness.experiment.snapshots.history()) == 1
