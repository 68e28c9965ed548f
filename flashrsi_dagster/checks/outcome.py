"""A check's outcome as plain data: what the Dagster asset check reports and the explorer
shows, evaluated once (`checks.host`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["error", "warn"]
Status = Literal["passed", "warning", "failed"]


class CheckOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    passed: bool
    severity: Severity = Field(
        description="`warn`: a failure is a warning (never a rejection); `error`: a failure."
    )
    summary: str = Field(description="Why it passed, warned or failed, in one line.")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Its figures: strings, numbers, booleans."
    )
    markdown: dict[str, str] = Field(
        default_factory=dict, description="Its longer evidence, as markdown (a table of hits)."
    )

    @property
    def status(self) -> Status:
        if self.passed:
            return "passed"
        return "warning" if self.severity == "warn" else "failed"

    @property
    def result(self) -> str:
        """The status and the summary in words, first in what the UI shows: Dagster labels a
        failed check "Failed" whatever its severity, so a warning says so here."""
        return f"{self.status}: {self.summary}" if self.summary else self.status
