"""Reading and writing records: redacted, atomic, and loud about the file when it is bad."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ValidationError

from flashrsi_dagster.records.atomic import write_text_atomic
from flashrsi_dagster.records.redaction import Redactor


class RecordError(ValueError):
    """A record file that cannot be read back: names the file and what is wrong."""


def dump_record(record: BaseModel, redactor: Redactor) -> str:
    return json.dumps(redactor.value(record.model_dump(mode="json")), indent=1, ensure_ascii=False)


def write_record(path: Path, record: BaseModel, redactor: Redactor) -> None:
    write_text_atomic(path, dump_record(record, redactor) + "\n")


def read_record[R: BaseModel](path: Path, model: type[R]) -> R:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordError(f"{path}: cannot read record: {exc.strerror}") from exc
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors()
        )
        raise RecordError(f"{path}: not a valid {model.__name__} record: {problems}") from exc
