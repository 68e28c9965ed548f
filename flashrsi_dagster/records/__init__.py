"""Records: the append-only, redacted, atomically written source of truth."""

from flashrsi_dagster.records.atomic import write_bytes_atomic, write_text_atomic
from flashrsi_dagster.records.redaction import REDACTED, RedactingFilter, Redactor
from flashrsi_dagster.records.store import RecordError, dump_record, read_record, write_record
from flashrsi_dagster.records.trajectory import ErrorInfo, Status, Trajectory, Usage

__all__ = [
    "REDACTED",
    "ErrorInfo",
    "RecordError",
    "RedactingFilter",
    "Redactor",
    "Status",
    "Trajectory",
    "Usage",
    "dump_record",
    "read_record",
    "write_bytes_atomic",
    "write_record",
    "write_text_atomic",
]
