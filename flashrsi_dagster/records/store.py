"""Reading and writing records: redacted, atomic, chained, and loud about the file when bad."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flashrsi_dagster.records.journal import Journal
from flashrsi_dagster.records.redaction import Redactor


class RecordError(ValueError):
    """A record file that cannot be read back: names the file and what is wrong."""


def dump_record(record: BaseModel, redactor: Redactor) -> str:
    return json.dumps(redactor.value(record.model_dump(mode="json")), indent=1, ensure_ascii=False)


class RecordStore(Journal):
    """An experiment folder's writer: a `Journal` (every write atomic and in the integrity
    chain) that also serialises records and passes them through the experiment's redactor."""

    def __init__(self, root: Path, redactor: Redactor) -> None:
        super().__init__(root)
        self.redactor = redactor

    def write[R: BaseModel](self, path: Path, record: R) -> R:
        """Write `record`, redacted; returns what was written (the redacted copy), which is
        what a caller may show or pass on: the in-memory original can still hold a key."""
        text = dump_record(record, self.redactor)
        self.write_bytes(path, (text + "\n").encode("utf-8"))
        return type(record).model_validate_json(text)


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


def read_optional[R: BaseModel](path: Path, model: type[R]) -> R | None:
    """The record at `path`, or None when there is none yet (a damaged one still raises).
    "None yet" is the failed read's own answer, not a second look: a record another process
    writes between the two would otherwise read as unreadable."""
    try:
        return read_record(path, model)
    except RecordError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):
            return None
        raise


class Record(BaseModel):
    """What every algorithm's records share: a schema version and when it was written."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    created: datetime = Field(default_factory=lambda: datetime.now(UTC))
