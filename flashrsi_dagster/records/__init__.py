"""Records: the append-only, redacted, atomically written and chained source of truth."""

from flashrsi_dagster.records.atomic import write_bytes_atomic, write_text_atomic
from flashrsi_dagster.records.chain import IntegrityError
from flashrsi_dagster.records.journal import Journal
from flashrsi_dagster.records.redaction import REDACTED, RedactingFilter, Redactor
from flashrsi_dagster.records.store import (
    Record,
    RecordError,
    RecordStore,
    dump_record,
    read_optional,
    read_record,
)
from flashrsi_dagster.records.trajectory import ErrorInfo, Status, Trajectory, Usage

__all__ = [
    "REDACTED",
    "ErrorInfo",
    "IntegrityError",
    "Journal",
    "Record",
    "RecordError",
    "RecordStore",
    "RedactingFilter",
    "Redactor",
    "Status",
    "Trajectory",
    "Usage",
    "dump_record",
    "read_optional",
    "read_record",
    "write_bytes_atomic",
    "write_text_atomic",
]
