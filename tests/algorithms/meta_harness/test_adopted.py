"""`worker.harness: adopted` in Meta-Harness (seed 003): round k's candidates are made by the
harness the search had adopted before k, run as the Worker with the Worker role's model, so the
harness round 1 produced takes part in producing round 2's. Run on the offline simulator, whose
demo Worker writes a workflow line into the harness it improves and, running a harness that
holds the line, reads its history in batches: the adopted harness edits differently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flashrsi_dagster import instruction_markers as markers
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.config import load_config
from flashrsi_dagster.decisions.ledger import Ledger
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.records import Trajectory, read_record

EXAMPLE = Path(__file__).parents[3] / "examples" / "meta_harness_adopted.yaml"


@pytest.fixture(scope="module")
def adopted(tmp_path_factory) -> MetaHarness:
    home = tmp_path_factory.mktemp("adopted") / "home"
    config = load_config(EXAMPLE, ["--experiment.home", str(home), "--benchmark.limit", "9"])
    harness = MetaHarness(open_experiment(config), log=lambda _: None)
    harness.run()
    return harness


def _worker(harness: MetaHarness, k: int) -> Trajectory:
    return read_record(harness.layout.worker(k), Trajectory)


def _shell_commands(trajectory: Trajectory) -> list[str]:
    return [
        json.loads(call["function"]["arguments"])["command"]
        for message in trajectory.messages
        for call in message.get("tool_calls") or ()
        if call["function"]["name"] == "shell"
    ]


def _system(trajectory: Trajectory) -> str:
    return next(m["content"] for m in trajectory.messages if m["role"] == "system")


def test_each_round_is_made_by_the_harness_adopted_before_it(adopted: MetaHarness):
    state = adopted.read_state()
    seed, first, second = (state.round(k) for k in range(3))
    assert first.produced_by == seed.snapshot_id  # the target's own harness edits first
    assert second.produced_by == first.snapshot_id  # round 1 beat the seed: it edits next
    assert [r.dev_score for r in state.rounds] == pytest.approx([4 / 9, 6 / 9, 7 / 9])


def test_the_improver_runs_the_adopted_harness_with_the_worker_s_model(adopted: MetaHarness):
    state = adopted.read_state()
    store = adopted.experiment.snapshots
    round_one_prompt = store.read_file_at(state.round(1).snapshot_id, "prompts/system.md").decode()
    first, second = _worker(adopted, 1), _worker(adopted, 2)
    assert markers.BATCH_READING not in _system(first)
    assert _system(second).strip() == round_one_prompt.strip()  # round 1's harness, running
    assert markers.BATCH_READING in round_one_prompt  # written by the adopted improver
    config = second.messages[0]["content"] if second.messages[0]["role"] == "run_config" else {}
    assert not config or config["config"]["llm"]["model"] == "simulator/worker"


def test_the_adopted_harness_edits_differently(adopted: MetaHarness):
    """Round 1's Worker (the seed's harness) reads every history file with its own `cat`;
    round 2's (round 1's harness, holding the workflow line) reads them in batches."""
    first, second = _shell_commands(_worker(adopted, 1)), _shell_commands(_worker(adopted, 2))
    assert any(c.startswith("cat ") for c in first)
    assert not any(c.startswith("tail -n +1") for c in first)
    assert any(c.startswith("tail -n +1") for c in second)
    assert not any(c.startswith("cat ") for c in second)
    files_read_by_second = sum(c.count(".json") for c in second if c.startswith("tail"))
    assert len(second) < files_read_by_second  # fewer calls than files: batched


def test_both_edges_are_in_the_summary_and_the_ledger(adopted: MetaHarness):
    state = adopted.read_state()
    lines = adopted.summary(state)
    first = state.round(1).snapshot_id
    made = f"made by round 1's harness ({first[:12]})"
    assert any(line.startswith("round 2:") and made in line for line in lines)
    entries = {e.candidate.round: e for e in Ledger.of(adopted.experiment).entries()}
    assert entries[2].candidate.produced_by == first
    assert entries[2].baseline.round == 0  # the parent edge: every candidate edits the seed


def test_through_dagster_the_snapshot_asset_shows_who_made_it(tmp_path):
    """The same run as Dagster runs it (`flashrsi run`): round 2's snapshot materialization
    names its maker beside its parent."""
    import dagster as dg

    from flashrsi_dagster.algorithms.meta_harness.defs.assets import PARTITIONS
    from flashrsi_dagster.deployment.cli_driver import drive_on

    overrides = ["--experiment.home", str(tmp_path / "home"), "--benchmark.limit", "9"]
    config = load_config(EXAMPLE, [*overrides, "--algorithm.max_steps", "2"])
    with dg.instance_for_test() as instance:
        state = drive_on(instance, open_experiment(config), say=lambda _: None)
        snapshot = dg.AssetKey(["meta_harness", "snapshot"])
        where = str(PARTITIONS.key(config.experiment.name, 2, "c0"))
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=snapshot, asset_partitions=[where]), limit=1
        ).records
    metadata = records[0].asset_materialization.metadata
    assert metadata["produced_by"].value == state.round(1).snapshot_id
    assert metadata["parent_id"].value == state.round(0).snapshot_id
