"""SWE-bench instance records: read from JSON, JSONL or parquet, checked, turned into Tasks.

Files as the official Hugging Face datasets (princeton-nlp/SWE-bench, SWE-bench_Lite,
SWE-bench_Verified) are exported: `.parquet`; `.jsonl`; `.json` holding a JSON list of records
or JSON Lines (`datasets.Dataset.to_json` writes JSON Lines under a `.json` name). A folder means
every such file below it, in path order, skipping hidden folders and `repos/` (the
repositories, `repos.py`).

Required fields: `instance_id`, `repo`, `base_commit`, `problem_statement`, `version`, `patch`
(the gold patch), `test_patch` (text), and `FAIL_TO_PASS`, `PASS_TO_PASS` (lists of test names,
or their JSON text as in the official data). Optional text: `hints_text`, `created_at`,
`environment_setup_commit`, `image_name`. Any other field is kept in the task's metadata; a
`split` field there fixes the task's split.

Errors name the file, the line (JSON Lines) or record number (JSON list, parquet; from 1), the
instance id when it is known, and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from flashrsi_dagster.benchmarks.base import BenchmarkError, Task
from flashrsi_dagster.benchmarks.splits import refuse_duplicates
from flashrsi_dagster.benchmarks.swe_bench.repos import REPOS_FOLDER

REQUIRED_TEXT = (
    "instance_id",
    "repo",
    "base_commit",
    "problem_statement",
    "version",
    "patch",
    "test_patch",
)
TEST_LISTS = ("FAIL_TO_PASS", "PASS_TO_PASS")
OPTIONAL_TEXT = ("hints_text", "created_at", "environment_setup_commit", "image_name")
SUFFIXES = (".json", ".jsonl", ".parquet")


@dataclass(frozen=True)
class Located:
    """A raw record and where it was read, for error messages."""

    where: str
    record: dict[str, Any]

    def at(self, field: str) -> str:
        instance_id = self.record.get("instance_id")
        named = f" ({instance_id})" if isinstance(instance_id, str) and instance_id else ""
        return f"{self.where}{named}: field {field}"


def read_instances(path: Path) -> list[Task]:
    """Every record of a file or folder as a Task; duplicate instance ids are refused."""
    tasks = [to_task(item) for file in data_files(path) for item in read_records(file)]
    refuse_duplicates(tasks, str(path))
    return tasks


def image_name(instance_id: str) -> str:
    """The instance's prebuilt image, named as the official harness names those it publishes:
    the id lowercased, and `__` spelled `_1776_` (Docker Hub refuses `__` in names)."""
    return f"swebench/sweb.eval.x86_64.{instance_id.lower()}:latest".replace("__", "_1776_")


def instruction(repo: str, problem_statement: str) -> str:
    return f"Resolve the following issue in the {repo} repository.\n\n{problem_statement}"


def to_task(item: Located) -> Task:
    text = {name: _text(item, name) for name in REQUIRED_TEXT}
    optional = {name: _optional_text(item, name) for name in OPTIONAL_TEXT}
    fail_to_pass, pass_to_pass = (_test_list(item, name) for name in TEST_LISTS)
    if not fail_to_pass:
        # With nothing to fail, the official rule would count any patch as a resolution.
        raise BenchmarkError(f"{item.at('FAIL_TO_PASS')}: empty, so the task cannot fail")
    known = {*REQUIRED_TEXT, *TEST_LISTS, *OPTIONAL_TEXT}
    extra = {k: v for k, v in item.record.items() if k not in known}
    image = optional.pop("image_name") or image_name(text["instance_id"])
    return Task(
        id=text["instance_id"],
        instruction=instruction(text["repo"], text["problem_statement"]),
        verifier={
            "repo": text["repo"],
            "base_commit": text["base_commit"],
            "version": text["version"],
            "fail_to_pass": fail_to_pass,
            "pass_to_pass": pass_to_pass,
            "test_patch": text["test_patch"],
            "gold_patch": text["patch"],
        },
        metadata={
            **extra,
            "image": image,
            **{k: v for k, v in optional.items() if v is not None},
        },
    )


def data_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(
            p
            for p in path.rglob("*")
            if p.suffix in SUFFIXES
            and p.is_file()
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
            and p.relative_to(path).parts[0] != REPOS_FOLDER
        )
        if not files:
            raise BenchmarkError(f"{path}: no .json, .jsonl or .parquet files in this folder")
        return files
    if path.suffix not in SUFFIXES:
        raise BenchmarkError(f"{path}: expected a .json, .jsonl or .parquet file, or a folder")
    if not path.is_file():
        raise BenchmarkError(f"{path}: no such file")
    return [path]


def read_records(path: Path) -> list[Located]:
    if path.suffix == ".parquet":
        items = _parquet(path)
    else:
        text = path.read_text(encoding="utf-8")
        items = _json_list(path, text) if text.lstrip().startswith("[") else _json_lines(path, text)
    if not items:
        raise BenchmarkError(f"{path}: no records")
    return items


def _json_list(path: Path, text: str) -> list[Located]:
    try:
        records = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BenchmarkError(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
    return [_located(f"{path}: record {n}", record) for n, record in enumerate(records, start=1)]


def _json_lines(path: Path, text: str) -> list[Located]:
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BenchmarkError(f"{path}: line {number}: not JSON ({exc.msg})") from None
        items.append(_located(f"{path}: line {number}", record))
    return items


def _parquet(path: Path) -> list[Located]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        records = pq.read_table(path).to_pylist()
    except (pa.ArrowException, OSError) as exc:
        raise BenchmarkError(f"{path}: not a readable parquet file ({exc})") from None
    return [_located(f"{path}: record {n}", record) for n, record in enumerate(records, start=1)]


def _located(where: str, record: Any) -> Located:
    if not isinstance(record, dict):
        raise BenchmarkError(f"{where}: expected a JSON object, got {type(record).__name__}")
    return Located(where, record)


def _text(item: Located, name: str) -> str:
    value = item.record.get(name)
    if value is None or value == "":
        raise BenchmarkError(f"{item.at(name)}: missing or empty")
    if not isinstance(value, str):
        # A number is refused, not converted: version 3.10 read as a float would become "3.1".
        raise BenchmarkError(f"{item.at(name)}: expected text, got {type(value).__name__}")
    return value


def _optional_text(item: Located, name: str) -> str | None:
    value = item.record.get(name)
    if isinstance(value, datetime):  # a parquet timestamp column
        return value.isoformat()
    if value is not None and not isinstance(value, str):
        raise BenchmarkError(f"{item.at(name)}: expected text, got {type(value).__name__}")
    return value


def _test_list(item: Located, name: str) -> list[str]:
    value = item.record.get(name)
    if value is None:
        raise BenchmarkError(f"{item.at(name)}: missing")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise BenchmarkError(f"{item.at(name)}: not a JSON list ({exc.msg})") from None
    if not isinstance(value, list) or not all(isinstance(test, str) for test in value):
        raise BenchmarkError(
            f"{item.at(name)}: expected a list of test names or its JSON text, "
            f"got {type(value).__name__}"
        )
    return value
