"""Text classification on the built-in corpus: tasks, scoring, and a harness that matters."""

from __future__ import annotations

import json
import shutil

import pytest

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.benchmarks.base import BenchmarkError, Task
from flashrsi_dagster.benchmarks.loading import load_benchmark, load_splits
from flashrsi_dagster.benchmarks.text_classification import TextClassification, normalise, score
from flashrsi_dagster.config import BenchmarkConfig, RoleConfig
from flashrsi_dagster.records import RecordStore, Redactor, Status, Trajectory
from flashrsi_dagster.rollouts.engine import Settings, run_rollouts
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.rollouts.scores import scores_frame, summary


def test_builtin_corpus_loads_with_default_splits():
    benchmark = load_benchmark(BenchmarkConfig(name="text_classification"))
    splits = load_splits(BenchmarkConfig(name="text_classification"), benchmark)

    assert len(benchmark.tasks()) == 180  # 181 rows, one duplicated text dropped
    assert benchmark.labels == ["benign", "malicious"]
    assert (len(splits.train), len(splits.dev), splits.test_size) == (60, 40, 80)
    task = splits.dev[0]
    assert "Labels: benign, malicious\nText: " in task.instruction
    assert task.verifier["label"] in ("benign", "malicious")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("malicious", "malicious"),
        ("  Malicious.\n", "malicious"),
        ("Label: benign", "benign"),
        ("`benign`", "benign"),
        ("answer - MALICIOUS!", "malicious"),
    ],
)
def test_answers_are_normalised(answer, expected):
    assert normalise(answer) == expected


def test_score_marks_wrong_answers_as_failures_and_keeps_errors():
    task = Task(id="t", instruction="x", verifier={"label": "benign"})
    done = Trajectory(task_id="t", snapshot_id="s", status=Status.SUCCESS, answer="Benign")
    wrong = done.model_copy(update={"answer": "malicious"})
    broken = done.model_copy(update={"status": Status.ERROR, "answer": None})

    assert (score(task, done).score, score(task, done).status) == (1.0, Status.SUCCESS)
    assert (score(task, wrong).score, score(task, wrong).status) == (0.0, Status.FAILURE)
    assert (score(task, broken).score, score(task, broken).status) == (0.0, Status.ERROR)
    assert score(task, wrong).metadata["expected"] == "benign"


def test_a_data_file_replaces_the_corpus_and_bad_lines_are_named(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "a", "text": "hi", "label": "x"}) + "\n{oops\n")

    with pytest.raises(BenchmarkError, match=r"data.jsonl: line 2: not JSON"):
        TextClassification(data)
    data.write_text(json.dumps({"id": "a", "text": "hi"}) + "\n")
    with pytest.raises(BenchmarkError, match=r"line 1: missing, empty or non-text label"):
        TextClassification(data)


def test_a_better_harness_prompt_scores_better(tmp_path):
    benchmark = TextClassification()
    splits = load_splits(BenchmarkConfig(name="text_classification", limit=16), benchmark)
    harness = tmp_path / "harness"
    shutil.copytree(HARNESS, harness)
    role = RoleConfig.model_validate(
        {"type": "miniagent", "llm": {"model": "simulator/target", "base_url": "offline"}}
    )
    rules = (
        "\n- malicious when the text mentions: ignore, previous instructions, system prompt,"
        " disregard, unrestricted, reveal, secret\nDefault label: benign\n"
    )

    scores = {}
    with target_agent(role, harness) as agent:
        for name, extra in (("seed", ""), ("improved", rules)):
            (harness / "prompts/system.md").write_text(
                (HARNESS / "prompts/system.md").read_text() + extra
            )
            record = RolloutRecord(tmp_path / f"{name}.jsonl", RecordStore(tmp_path, Redactor()))
            final = run_rollouts(
                benchmark, agent, splits.dev, record, split="dev", settings=Settings(concurrency=4)
            )
            scores[name] = summary(scores_frame(final), len(splits.dev))["score"]

    assert scores["improved"] > scores["seed"]
