"""SWE-bench: loading downloaded instance records, splits, image names, and rollouts
that refuse without a local copy of the repository (`swe_bench/` runs them end to end).

The records are hand-written in the official schema after three real instances, abridged;
their commits and patches are illustrative.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flashrsi_dagster.benchmarks.base import BenchmarkError, SystemicFault
from flashrsi_dagster.benchmarks.loading import load_benchmark, load_splits
from flashrsi_dagster.benchmarks.swe_bench import SWEBench, image_name
from flashrsi_dagster.config import BenchmarkConfig

SEPARABLE = "astropy/modeling/tests/test_separable.py"


def _record(instance_id: str, repo: str, version: str, f2p: list, p2p: list, **extra) -> dict:
    """A record as the official datasets hold it: the test lists as JSON text."""
    return {
        "instance_id": instance_id,
        "repo": repo,
        "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
        "problem_statement": f"Issue of {instance_id}.\nSteps to reproduce: ...\n",
        "hints_text": "",
        "created_at": "2022-03-03T15:14:54Z",
        "version": version,
        "environment_setup_commit": "298ccb478e6bf092953bca67a3d29dc6c35f6752",
        "patch": f"diff --git a/{repo}/fix.py b/{repo}/fix.py\n-    x = 1\n+    x = right\n",
        "test_patch": "diff --git a/tests/test_fix.py b/tests/test_fix.py\n+def test_fix(): ...\n",
        "FAIL_TO_PASS": json.dumps(f2p),
        "PASS_TO_PASS": json.dumps(p2p),
        **extra,
    }


ASTROPY = _record(
    "astropy__astropy-12907",
    "astropy/astropy",
    "4.3",
    [
        f"{SEPARABLE}::test_separable[compound_model6-result6]",
        f"{SEPARABLE}::test_separable[compound_model9-result9]",
    ],
    [f"{SEPARABLE}::test_coord_matrix", f"{SEPARABLE}::test_cdot", f"{SEPARABLE}::test_cstack"],
    problem_statement=(
        "Modeling's `separability_matrix` does not compute separability correctly for nested "
        "CompoundModels\nConsider the following model: cm = m.Linear1D(10) & m.Linear1D(5)\n"
    ),
    hints_text="The bug is in `_cstack`: it sets the right block to 1.",
)
PYTEST = _record(
    "pytest-dev__pytest-5227",
    "pytest-dev/pytest",
    "4.4",
    ["testing/logging/test_reporting.py::test_log_cli_enabled_disabled[True]"],
    ["testing/logging/test_reporting.py::test_nothing_logged"],
)
DJANGO = _record(
    "django__django-11099",
    "django/django",
    "3.0",
    ["test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)"],
    [],
)
RECORDS = [ASTROPY, PYTEST, DJANGO]


def write_json(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=2))
    return path


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def write_parquet(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records), path)
    return path


def test_a_record_becomes_a_task_with_the_issue_as_instruction(tmp_path):
    task = SWEBench(write_json(tmp_path / "lite.json", [ASTROPY])).tasks()[0]

    assert task.id == "astropy__astropy-12907"
    assert task.instruction.startswith(
        "Resolve the following issue in the astropy/astropy repository.\n\n"
        "Modeling's `separability_matrix`"
    )
    assert task.verifier == {
        "repo": "astropy/astropy",
        "base_commit": ASTROPY["base_commit"],
        "version": "4.3",
        "fail_to_pass": json.loads(ASTROPY["FAIL_TO_PASS"]),
        "pass_to_pass": json.loads(ASTROPY["PASS_TO_PASS"]),
        "test_patch": ASTROPY["test_patch"],
        "gold_patch": ASTROPY["patch"],
    }
    assert task.metadata == {
        "image": "swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest",
        "created_at": "2022-03-03T15:14:54Z",
        "hints_text": ASTROPY["hints_text"],
        "environment_setup_commit": ASTROPY["environment_setup_commit"],
    }
    assert "_cstack" not in task.instruction  # hints are not shown


@pytest.mark.parametrize(
    ("name", "write"),
    [
        ("data.json", write_json),
        ("data.jsonl", write_jsonl),
        ("data.json", write_jsonl),  # `datasets.Dataset.to_json` writes JSON Lines as .json
        ("data.parquet", write_parquet),
    ],
)
def test_every_file_format_loads_the_same_tasks(tmp_path, name, write):
    reference = SWEBench(write_json(tmp_path / "reference" / "r.json", RECORDS)).tasks()

    tasks = SWEBench(write(tmp_path / name, RECORDS)).tasks()

    assert tasks == reference


def test_a_folder_loads_every_data_file_below_it(tmp_path):
    folder = tmp_path / "SWE-bench_Lite"
    write_parquet(folder / "data" / "test-00000-of-00001.parquet", [ASTROPY, PYTEST])
    write_jsonl(folder / "extra.jsonl", [DJANGO])
    write_json(folder / ".cache" / "stale.json", RECORDS)  # hidden folders are skipped
    (folder / "repos" / "astropy__astropy").mkdir(parents=True)  # the repositories, too
    (folder / "repos" / "astropy__astropy" / "package.json").write_text("{}")
    (folder / "README.md").write_text("not data")

    tasks = SWEBench(folder).tasks()

    assert sorted(t.id for t in tasks) == sorted(r["instance_id"] for r in RECORDS)


def test_test_lists_may_be_lists_or_json_text(tmp_path):
    as_lists = {
        **PYTEST,
        "FAIL_TO_PASS": json.loads(PYTEST["FAIL_TO_PASS"]),
        "PASS_TO_PASS": json.loads(PYTEST["PASS_TO_PASS"]),
    }

    from_text = SWEBench(write_jsonl(tmp_path / "text.jsonl", [PYTEST])).tasks()
    from_lists = SWEBench(write_parquet(tmp_path / "lists.parquet", [as_lists])).tasks()

    assert from_lists == from_text
    assert from_text[0].verifier["fail_to_pass"] == [
        "testing/logging/test_reporting.py::test_log_cli_enabled_disabled[True]"
    ]


def _without(record: dict, field: str) -> dict:
    return {k: v for k, v in record.items() if k != field}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (_without(PYTEST, "test_patch"), "field test_patch: missing or empty"),
        ({**PYTEST, "version": 4.4}, "field version: expected text, got float"),
        ({**PYTEST, "FAIL_TO_PASS": "[oops"}, "field FAIL_TO_PASS: not a JSON list"),
        ({**PYTEST, "PASS_TO_PASS": [1, 2]}, "field PASS_TO_PASS: expected a list of test names"),
        ({**PYTEST, "FAIL_TO_PASS": "[]"}, "field FAIL_TO_PASS: empty, so the task cannot fail"),
        ({**PYTEST, "hints_text": ["a"]}, "field hints_text: expected text, got list"),
    ],
)
def test_a_bad_record_is_named_by_file_line_id_and_field(tmp_path, bad, message):
    path = write_jsonl(tmp_path / "bad.jsonl", [ASTROPY, bad])

    with pytest.raises(BenchmarkError) as error:
        SWEBench(path).tasks()

    assert str(error.value).startswith(f"{path}: line 2 (pytest-dev__pytest-5227): ")
    assert message in str(error.value)


def test_a_bad_json_line_or_record_is_named(tmp_path):
    lines = tmp_path / "lines.jsonl"
    lines.write_text(json.dumps(ASTROPY) + "\n\n{not json\n")
    listed = write_json(tmp_path / "list.json", [ASTROPY, ["not", "a", "record"]])
    parquet = write_parquet(tmp_path / "no-id.parquet", [ASTROPY, {**DJANGO, "instance_id": None}])

    with pytest.raises(BenchmarkError, match=r"lines\.jsonl: line 3: not JSON"):
        SWEBench(lines).tasks()
    with pytest.raises(BenchmarkError, match=r"list\.json: record 2: expected a JSON object"):
        SWEBench(listed).tasks()
    with pytest.raises(
        BenchmarkError, match=r"no-id\.parquet: record 2: field instance_id: missing"
    ):
        SWEBench(parquet).tasks()


def test_duplicate_instance_ids_are_refused_by_name(tmp_path):
    folder = tmp_path / "data"
    write_json(folder / "a.json", [ASTROPY, PYTEST])
    write_jsonl(folder / "b.jsonl", [PYTEST, DJANGO, ASTROPY])

    with pytest.raises(BenchmarkError) as error:
        SWEBench(folder).tasks()

    assert str(error.value) == (
        f"{folder}: duplicate task ids: astropy__astropy-12907, pytest-dev__pytest-5227"
    )


def test_no_data_path_or_no_data_files_is_explained(tmp_path):
    benchmark = load_benchmark(BenchmarkConfig(name="swe_bench"))

    with pytest.raises(BenchmarkError, match=r"download it separately .* benchmark\.data_path"):
        benchmark.tasks()
    with pytest.raises(BenchmarkError, match=r"expected a \.json, \.jsonl or \.parquet file"):
        SWEBench(tmp_path / "data.csv").tasks()
    with pytest.raises(BenchmarkError, match=r"no \.json, \.jsonl or \.parquet files"):
        SWEBench(tmp_path).tasks()


@pytest.mark.parametrize(
    ("instance_id", "image"),
    [
        ("astropy__astropy-12907", "swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest"),
        ("django__django-11099", "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"),
        (
            "Automattic__wp-calypso-21648",  # the harness lowercases ids
            "swebench/sweb.eval.x86_64.automattic_1776_wp-calypso-21648:latest",
        ),
    ],
)
def test_image_names_follow_the_official_harness(instance_id, image):
    assert image_name(instance_id) == image


def test_an_image_name_field_overrides_the_official_name(tmp_path):
    records = [ASTROPY, {**PYTEST, "image_name": "registry.local/sweb:5227"}]

    tasks = SWEBench(write_jsonl(tmp_path / "images.jsonl", records)).tasks()

    assert [t.metadata["image"] for t in tasks] == [
        "swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest",
        "registry.local/sweb:5227",
    ]


def _config(data: Path, **kw) -> BenchmarkConfig:
    return BenchmarkConfig(
        name="swe_bench", data_path=data, split_counts={"train": 1, "dev": 1, "test": 1}, **kw
    )


def test_splits_are_drawn_from_the_loaded_pool(tmp_path):
    config = _config(write_parquet(tmp_path / "lite.parquet", RECORDS), seed=3)
    benchmark = load_benchmark(config)

    splits = load_splits(config, benchmark)
    again = load_splits(config, load_benchmark(config))

    drawn = [*splits.train, *splits.dev, *splits.unseal_test()]
    assert sorted(t.id for t in drawn) == sorted(r["instance_id"] for r in RECORDS)
    assert (splits.train, splits.dev, splits.unseal_test()) == (
        again.train,
        again.dev,
        again.unseal_test(),
    )
    with pytest.raises(BenchmarkError, match="no split_counts"):
        load_splits(config.model_copy(update={"split_counts": None}), benchmark)


def test_a_split_field_in_the_data_fixes_the_split(tmp_path):
    records = [
        {**ASTROPY, "split": "test"},
        {**PYTEST, "split": "dev"},
        {**DJANGO, "split": "train"},
    ]
    config = BenchmarkConfig(name="swe_bench", data_path=write_jsonl(tmp_path / "s.jsonl", records))

    splits = load_splits(config, load_benchmark(config))

    assert [t.id for t in splits.unseal_test()] == ["astropy__astropy-12907"]
    assert [t.id for t in splits.dev] == ["pytest-dev__pytest-5227"]


def test_evolution_data_replaces_train_and_must_not_overlap_dev_or_test(tmp_path):
    pool = write_parquet(tmp_path / "lite.parquet", RECORDS)
    sympy = _record("sympy__sympy-20590", "sympy/sympy", "1.7", ["test_immutable"], [])
    fresh = write_jsonl(tmp_path / "evolve.jsonl", [sympy])
    config = _config(pool, evolution_data_path=fresh)

    splits = load_splits(config, load_benchmark(config))
    assert [t.id for t in splits.train] == ["sympy__sympy-20590"]

    held_out = splits.dev[0]
    same_id = write_jsonl(
        tmp_path / "same-id.jsonl", [sympy, {**sympy, "instance_id": held_out.id}]
    )
    renamed = next(r for r in RECORDS if r["instance_id"] == held_out.id)
    copied = write_jsonl(tmp_path / "copied.jsonl", [{**renamed, "instance_id": "copy__copy-1"}])
    with pytest.raises(BenchmarkError, match=rf"overlaps dev/test: {held_out.id} \(same id\)"):
        load_splits(_config(pool, evolution_data_path=same_id), load_benchmark(config))
    with pytest.raises(BenchmarkError, match=r"copy__copy-1 \(same checksum\), .* instruction"):
        load_splits(_config(pool, evolution_data_path=copied), load_benchmark(config))


@pytest.fixture
def astropy(tmp_path):
    return SWEBench(write_json(tmp_path / "a.json", [ASTROPY])).tasks()[0]


def test_rollout_refuses_clearly_without_a_local_copy_of_the_repository(astropy, tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(ASTROPY))

    with pytest.raises(SystemicFault) as error:  # the agent is never reached
        SWEBench(data).rollout(None, astropy, split="dev", attempt=0)

    message = str(error.value)
    assert "no local copy of the repository astropy/astropy" in message
    assert str(tmp_path / "repos" / "astropy__astropy") in message
    assert "https://github.com/astropy/astropy" in message
