"""The `content_not_contaminated` asset check, through a real Dagster instance: Meta-Harness
driven as runs of its jobs, a scripted Worker carrying dev texts with their labels in the
prompt; the check fails (ERROR) on that candidate's snapshot with the evidence, passes on the
seed's; and the rendering of a verdict's hits for the UI."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from flashrsi_dagster.algorithms.meta_harness.defs.assets import PARTITIONS, key
from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.checks.host import content_hits_markdown
from flashrsi_dagster.config import load_config
from flashrsi_dagster.contamination import ContentVerdict, Hit
from flashrsi_dagster.deployment.cli_driver import drive_on
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.orchestration.describe import CONTENT_CHECK
from tests.conftest import needs_jails
from tests.dagster_instances import instance_on, sqlite_only
from tests.sabotage.helpers import say, script_model, shell, unique

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"
CHECK = dg.AssetCheckKey(key("snapshot"), CONTENT_CHECK)


@needs_jails
@sqlite_only
def test_the_check_fails_with_the_evidence_on_a_contaminated_candidate_only(tmp_path, storage):
    worker = unique("content-check")
    overrides = ["--experiment.home", str(tmp_path / "home"), "--benchmark.limit", "3"]
    overrides += ["--algorithm.max_steps", "1", "--benchmark.concurrency", "1"]
    overrides += ["--algorithm.worker.llm.model", script_model(worker)]
    experiment = open_experiment(load_config(EXAMPLE, overrides))
    name = experiment.config.experiment.name
    algorithm = open_algorithm(experiment)
    dev = algorithm.splits.dev
    rows = "".join(
        f"{algorithm.benchmark.secrets(t)[0].text} -> {t.verifier['label']}\n" for t in dev
    )
    script_model(worker, [shell(f"cat >> prompts/system.md <<'EOF'\n{rows}EOF"), say()])
    with instance_on(storage) as instance:
        state = drive_on(instance, experiment, say=lambda _: None)
        assert state.round(1).status == "rejected"
        history = instance.event_log_storage.get_asset_check_execution_history(CHECK, limit=10)
    evaluations = [r.event.dagster_event.event_specific_data for r in history if r.event]
    by_partition = {e.metadata["partition"].value: e for e in evaluations}

    seed = by_partition[str(PARTITIONS.key(name, 0, "c0"))]
    evaluation = by_partition[str(PARTITIONS.key(name, 1, "c0"))]
    assert seed.passed and seed.metadata["checked"].value == "no: the seed"
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
    metadata = {k: v.value for k, v in evaluation.metadata.items()}
    assert metadata["dev_task_ids"] == ", ".join(sorted(t.id for t in dev))
    assert "beside its answer" in metadata["rules"]
    assert "| prompts/system.md |" in metadata["evidence"]


def test_held_out_hits_are_listed_without_their_task():
    hit = dict(secret="text", file="runtime/agent.py", encoding="plain", chars=60)
    verdict = ContentVerdict(
        snapshot_id="a" * 40,
        baseline_id="b" * 40,
        contaminated=True,
        rules=["a task's input beside its answer"],
        hits=[
            Hit(rule="paired", task_id="jb-001", split="dev", lines=(3, 3), **hit),
            Hit(rule="paired", task_id=None, split="held_out", lines=(4, 9), **hit),
        ],
        hit_count=2,
        tasks={"dev": 1, "held_out": 1},
        named={"dev": ["jb-001"]},
        files=1,
    )
    table = content_hits_markdown(verdict)
    assert "| paired | jb-001 | dev | text | runtime/agent.py | 3 | plain |" in table
    assert "| paired | _held out, not named_ | held_out | text | runtime/agent.py | 4-9 |" in table
