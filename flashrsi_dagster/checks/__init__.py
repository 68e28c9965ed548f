"""The checks on a candidate and on the sealed test, evaluated as plain data: the Dagster asset
checks (`orchestration/describe.py`) and the explorer's node panel share these."""

from flashrsi_dagster.checks.outcome import CheckOutcome, Severity, Status

__all__ = ["CheckOutcome", "Severity", "Status"]
