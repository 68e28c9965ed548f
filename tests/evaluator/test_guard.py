"""The evaluator guard: the manifest recorded at the first evaluation, every later one shown
to run against the same files, and the evaluation sets versioned (e1, e2, …) with their
comparisons labelled."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flashrsi_dagster.benchmarks.harbor.suite import TASKS_DIR
from flashrsi_dagster.benchmarks.loading import load_benchmark, load_splits
from flashrsi_dagster.config.models import BenchmarkConfig
from flashrsi_dagster.evaluator import (
    DifferentEvalSets,
    Evaluator,
    EvaluatorChanged,
    basis,
    require_same,
)
from flashrsi_dagster.evaluator import files as evaluator_files
from flashrsi_dagster.evaluator.manifest import EvaluatorManifest
from flashrsi_dagster.records import RecordStore, Redactor, read_record


def rows(*specs: tuple[str, str, str]) -> str:
    return "".join(
        json.dumps({"id": i, "text": f"text {i}", "label": label, "split": split}) + "\n"
        for i, label, split in specs
    )


BASE = [("a", "benign", "train"), ("b", "malicious", "dev"), ("c", "benign", "dev")]
BASE += [("sealed-d", "malicious", "test"), ("sealed-e", "benign", "test")]


def guard(tmp_path: Path, **config) -> Evaluator:
    benchmark_config = BenchmarkConfig(**config)
    records = RecordStore(tmp_path / "exp", Redactor([]))
    return Evaluator(
        records,
        tmp_path / "exp" / "records" / "evaluator",
        benchmark_config,
        load_benchmark(benchmark_config),
    )


def splits_now(evaluator: Evaluator):
    """The splits as a new run would load them (the benchmark reads its data afresh)."""
    return load_splits(evaluator.config, load_benchmark(evaluator.config))


def dev_of(evaluator: Evaluator):
    return splits_now(evaluator).dev


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text(rows(*BASE))
    return path


def test_the_first_evaluation_records_the_manifest_and_dev_e1(tmp_path, data):
    evaluator = guard(tmp_path, name="text_classification", data_path=data)

    version = evaluator.before("dev", dev_of(evaluator))

    assert version.label == "dev/e1" and list(version.tasks) == ["b", "c"]
    manifest = read_record(evaluator.manifest_path, EvaluatorManifest)
    assert manifest.roles[str(data.resolve())] == "data"
    modules = [p for p, role in manifest.roles.items() if role == "module"]
    assert any(p.endswith("benchmarks/text_classification.py") for p in modules)
    assert any(p.endswith("rollouts/scores.py") for p in modules)
    assert manifest.sealed_test is not None
    assert "sealed-" not in manifest.model_dump_json()  # names no test task
    assert evaluator.before("dev", dev_of(evaluator)).label == "dev/e1"  # unchanged: e1


def test_a_new_task_goes_into_e2_and_e1_is_kept(tmp_path, data):
    evaluator = guard(tmp_path, name="text_classification", data_path=data)
    e1 = evaluator.before("dev", dev_of(evaluator))
    e1_bytes = evaluator.sets.path("dev", 1).read_bytes()

    data.write_text(rows(*BASE, ("f", "malicious", "dev")))  # a new failing task, between runs
    e2 = evaluator.before("dev", dev_of(evaluator))

    assert (e1.label, e2.label) == ("dev/e1", "dev/e2")
    assert e2.previous == "dev/e1" and e2.added == ["f"] and e2.removed == []
    assert evaluator.sets.path("dev", 1).read_bytes() == e1_bytes
    manifest = read_record(evaluator.manifest_path, EvaluatorManifest)
    assert manifest.amendments[-1].files == [str(data.resolve())]
    assert "dev/e2" in manifest.amendments[-1].reason


def test_an_e1_e2_comparison_is_labelled_and_never_a_lift():
    different = basis("dev/e2", "dev/e1")
    assert not different.comparable
    assert different.label == "different evaluation sets (dev/e2 vs dev/e1): not a lift"
    with pytest.raises(DifferentEvalSets, match="not a lift"):
        require_same("dev/e2", "dev/e1")
    same = require_same("dev/e1", "dev/e1")
    assert same.comparable and same.label == "on dev/e1"
    assert not basis("dev/e1", None).comparable
    assert basis(None, None).comparable  # records made before versioning compare as before


def test_an_explicitly_added_task_makes_a_new_version(tmp_path, data):
    evaluator = guard(tmp_path, name="text_classification", data_path=data)
    e1 = evaluator.before("dev", dev_of(evaluator))

    e2 = evaluator.sets.extend("dev", {"new-failure": "f" * 64}, "failed in round 3")

    assert e2.label == "dev/e2" and e2.added == ["new-failure"]
    assert list(e2.tasks) == [*e1.tasks, "new-failure"]
    assert [v.label for v in evaluator.sets.versions("dev")] == ["dev/e1", "dev/e2"]


def test_a_recorded_task_edited_under_its_id_is_refused(tmp_path, data):
    evaluator = guard(tmp_path, name="text_classification", data_path=data)
    evaluator.before("dev", dev_of(evaluator))

    data.write_text(rows(*[(i, "benign" if i == "b" else lab, s) for i, lab, s in BASE]))

    with pytest.raises(EvaluatorChanged, match=r"task b.s instruction or verifier differs.*dev/e1"):
        evaluator.before("dev", dev_of(evaluator))
    assert not evaluator.sets.path("dev", 2).exists()


def test_a_task_moved_between_splits_is_refused(tmp_path, data):
    evaluator = guard(tmp_path, name="text_classification", data_path=data)
    evaluator.before("dev", dev_of(evaluator))

    data.write_text(rows(*[(i, lab, "train" if i == "c" else s) for i, lab, s in BASE]))
    train = splits_now(evaluator).train

    with pytest.raises(EvaluatorChanged, match="task c was in dev/e1 and is now in train"):
        evaluator.before("train", train)


def test_the_sealed_test_refuses_a_changed_test_split(tmp_path, data):
    evaluator = guard(tmp_path, name="text_classification", data_path=data)
    evaluator.before("dev", dev_of(evaluator))

    data.write_text(rows(*BASE, ("sealed-g", "benign", "test")))
    tasks = splits_now(evaluator).unseal_test()

    with pytest.raises(EvaluatorChanged, match="test split's tasks differ"):
        evaluator.before_sealed_test(tasks)


def test_the_unchanged_test_split_is_versioned_at_the_sealed_test(tmp_path, data):
    evaluator = guard(tmp_path, name="text_classification", data_path=data)
    evaluator.before("dev", dev_of(evaluator))
    tasks = splits_now(evaluator).unseal_test()

    assert evaluator.before_sealed_test(tasks).label == "test/e1"


def test_a_changed_harbor_verifier_is_refused_naming_the_file(tmp_path):
    tasks_dir = tmp_path / "tasks"
    shutil.copytree(TASKS_DIR, tasks_dir)
    evaluator = guard(tmp_path, name="terminal_bench", tasks_dir=tasks_dir)
    dev = dev_of(evaluator)
    evaluator.before("dev", dev)
    manifest = read_record(evaluator.manifest_path, EvaluatorManifest)
    task = dev[0].environment
    assert manifest.roles[str(task / "tests" / "test.sh")] == "verifier"
    assert manifest.roles[str(task / "task.toml")] == "verifier"

    test_sh = task / "tests" / "test.sh"
    test_sh.write_text("#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n")  # always pass

    with pytest.raises(EvaluatorChanged, match=rf"verifier file {test_sh} changed"):
        evaluator.before("dev", dev)


def test_a_changed_scoring_module_is_refused_naming_it(tmp_path, data, monkeypatch):
    module = tmp_path / "scoring.py"
    module.write_text("def score(): return 0\n")
    monkeypatch.setattr("flashrsi_dagster.evaluator.guard.scoring_modules", lambda: [module])
    evaluator = guard(tmp_path, name="text_classification", data_path=data)
    evaluator.before("dev", dev_of(evaluator))

    module.write_text("def score(): return 1\n")

    with pytest.raises(EvaluatorChanged, match=rf"scoring module {module} changed"):
        evaluator.before("dev", dev_of(evaluator))


def test_a_later_check_stats_the_files_and_hashes_none(tmp_path, monkeypatch):
    evaluator = guard(tmp_path, name="text_classification")  # the built-in corpus
    dev = dev_of(evaluator)
    evaluator.before("dev", dev)

    def no_reading(*args, **kwargs):
        raise AssertionError(f"re-hashed {args[0]}")

    monkeypatch.setattr(evaluator_files, "open", no_reading, raising=False)
    for _ in range(3):
        evaluator.before("dev", dev)  # would raise on any file read again


def test_versions_are_ordered_by_number_not_by_file_name(tmp_path, data):
    """e1000 comes after e999 (their file names sort the other way)."""
    evaluator = guard(tmp_path, name="text_classification", data_path=data)
    first = evaluator.before("dev", dev_of(evaluator))
    for number in (999, 1000):
        later = first.model_copy(update={"version": number})
        evaluator.sets.records.write(evaluator.sets.path("dev", number), later)
    assert [v.version for v in evaluator.sets.versions("dev")] == [1, 999, 1000]


def fork_guard(tmp_path: Path, origin: Evaluator, name: str, *, reusable: bool) -> Evaluator:
    """The guard of a fork of `origin`'s experiment: its versions inherited."""
    config = origin.config
    records = RecordStore(tmp_path / name, Redactor([]))
    return Evaluator(
        records,
        tmp_path / name / "records" / "evaluator",
        config,
        load_benchmark(config),
        inherits=(origin.folder, origin.folder.parents[1].name, reusable),
    )


def test_a_fork_inherits_its_origins_versions_and_stays_on_them_when_unchanged(tmp_path, data):
    origin = guard(tmp_path, name="text_classification", data_path=data)
    origin.before("dev", dev_of(origin))
    fork = fork_guard(tmp_path, origin, "fork", reusable=True)

    version = fork.before("dev", dev_of(fork))

    assert version.label == "dev/e1" and version.inherited_from == "exp"
    assert version.tasks == origin.sets.versions("dev")[0].tasks
    assert basis(version.label, "dev/e1").comparable  # the same tasks: the origin's scores pair


def test_each_night_opens_the_next_version_and_a_chain_keeps_counting(tmp_path, data):
    night1 = guard(tmp_path, name="text_classification", data_path=data)
    night1.before("dev", dev_of(night1))
    night2 = fork_guard(tmp_path, night1, "night2", reusable=False)

    e2 = night2.before("dev", dev_of(night2))
    night3 = fork_guard(tmp_path, night2, "night3", reusable=False)
    e3 = night3.before("dev", dev_of(night3))

    assert (e2.label, e2.previous, e2.inherited_from) == ("dev/e2", "dev/e1", None)
    assert (e3.label, e3.previous) == ("dev/e3", "dev/e2")
    assert [v.label for v in night3.sets.versions("dev")] == ["dev/e1", "dev/e2", "dev/e3"]
    assert [v.inherited_from for v in night3.sets.versions("dev")] == ["exp", "night2", None]
    assert night2.before("dev", dev_of(night2)).label == "dev/e2"  # within a night: reused
    assert not basis(e3.label, e2.label).comparable  # never paired across nights


def test_a_fork_whose_dev_holds_a_task_its_origin_tested_on_is_refused(tmp_path, data):
    origin = guard(tmp_path, name="text_classification", data_path=data)
    origin.before("dev", dev_of(origin))
    origin.before_sealed_test(splits_now(origin).unseal_test())  # test/e1 on record
    fork = fork_guard(tmp_path, origin, "fork", reusable=True)
    data.write_text(rows(*BASE[:3], ("sealed-d", "malicious", "dev"), BASE[4]))

    with pytest.raises(EvaluatorChanged, match="sealed-d was in test/e1 and is now in dev"):
        fork.before("dev", dev_of(fork))
