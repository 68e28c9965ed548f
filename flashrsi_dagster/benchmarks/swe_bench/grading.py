"""Grading from test results, by the official harness's rule (`swebench.harness.grading`).

A FAIL_TO_PASS test succeeds when it PASSED or XFAILed, and fails when it FAILED, ERRORed, was
SKIPPED or is missing from the results. A PASS_TO_PASS test succeeds when it PASSED, XFAILed or
was SKIPPED, and fails when it FAILED, ERRORed or is missing. The resolution is FULL when every
test of both lists succeeded, PARTIAL when some but not all FAIL_TO_PASS tests did and every
PASS_TO_PASS test did, NO otherwise; only FULL counts as resolved. For the repos in
`FAIL_ONLY_REPOS` a test fails only when it FAILED, as the harness does there.

`grade` assumes the patches applied and the tests ran: the harness grades a run whose log says
otherwise as unresolved without parsing it, and so should the caller.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from flashrsi_dagster.benchmarks.base import Task


class TestStatus(StrEnum):
    """The statuses the official log parsers produce."""

    PASSED = "PASSED"
    FAILED = "FAILED"
    ERROR = "ERROR"
    SKIPPED = "SKIPPED"
    XFAIL = "XFAIL"


class ResolvedStatus(StrEnum):
    FULL = "RESOLVED_FULL"
    PARTIAL = "RESOLVED_PARTIAL"
    NO = "RESOLVED_NO"


FAIL_ONLY_REPOS = frozenset(
    {
        "chartjs/Chart.js",
        "processing/p5.js",
        "markedjs/marked",
        "bpmn-io/bpmn-js",
        "openlayers/openlayers",
        "eslint/eslint",
    }
)
"""SWE-bench Multimodal repos whose official log parsers record only failing tests."""

FIXED = frozenset({TestStatus.PASSED, TestStatus.XFAIL})
MAINTAINED = FIXED | {TestStatus.SKIPPED}


class Outcome(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    success: list[str]
    failure: list[str]

    @property
    def rate(self) -> float:
        """Share of tests that succeeded; 1.0 for an empty list, as the harness counts it."""
        total = len(self.success) + len(self.failure)
        return len(self.success) / total if total else 1.0


class Grade(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str
    status: ResolvedStatus
    fail_to_pass: Outcome
    pass_to_pass: Outcome

    @property
    def resolved(self) -> bool:
        return self.status == ResolvedStatus.FULL


def grade(task: Task, test_results: Mapping[str, str]) -> Grade:
    """Grade `task` from `test_results` (test name -> status, as `parse_pytest_log` returns)."""
    _refuse_unknown_statuses(test_results)
    fail_only = task.verifier["repo"] in FAIL_ONLY_REPOS
    fail_to_pass = _outcome(task.verifier["fail_to_pass"], test_results, FIXED, fail_only)
    pass_to_pass = _outcome(task.verifier["pass_to_pass"], test_results, MAINTAINED, fail_only)
    return Grade(
        instance_id=task.id,
        status=resolution(fail_to_pass, pass_to_pass),
        fail_to_pass=fail_to_pass,
        pass_to_pass=pass_to_pass,
    )


def resolution(fail_to_pass: Outcome, pass_to_pass: Outcome) -> ResolvedStatus:
    if pass_to_pass.rate < 1:
        return ResolvedStatus.NO
    if fail_to_pass.rate == 1:
        return ResolvedStatus.FULL
    return ResolvedStatus.PARTIAL if fail_to_pass.rate > 0 else ResolvedStatus.NO


def _outcome(
    tests: list[str], results: Mapping[str, str], good: frozenset, fail_only: bool
) -> Outcome:
    if fail_only:
        failed = {test for test in tests if results.get(test) == TestStatus.FAILED}
    else:
        failed = {test for test in tests if results.get(test) not in good}
    return Outcome(
        success=[test for test in tests if test not in failed],
        failure=[test for test in tests if test in failed],
    )


def _refuse_unknown_statuses(results: Mapping[str, str]) -> None:
    # The harness counts an unknown status as neither success nor failure, so a typo such as
    # "passed" would silently leave a test out of the grade.
    unknown = sorted(name for name, status in results.items() if status not in set(TestStatus))
    if unknown:
        raise ValueError(
            f"unknown test status for {', '.join(unknown)}; expected one of {', '.join(TestStatus)}"
        )


_STATUS = "|".join(re.escape(status) for status in TestStatus)
_STATUS_FIRST = re.compile(rf"^({_STATUS})\s+(\S+)")
_TEST_FIRST = re.compile(rf"^(\S+)\s+({_STATUS})(?:\s|$)")
_SKIP_COUNT = re.compile(r"\[\d+\]")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_pytest_log(text: str) -> dict[str, str]:
    """Test name -> status from pytest output, as the harness's pytest parser reads it.

    Reads `-rA` short summary lines (`PASSED tests/test_x.py::test_a`, `FAILED ... - reason`,
    `ERROR ...`, `XFAIL ...`) and verbose lines (`tests/test_x.py::test_a PASSED [ 50%]`), with
    colour codes removed; a later line for the same test wins.

    Not parsed: Django's and SymPy's own test runners, and other languages' runners; grouped
    skips (`SKIPPED [2] path:line: reason` names no test); `XPASS` lines (the harness has no such
    status, so an XPASSed test counts as missing). Names are cut at the first space, as the
    harness cuts them, so they match its test lists; the harness's variant for requests, pydicom
    and pylint, which shortens path-valued parameter ids, is not applied.
    """
    results: dict[str, str] = {}
    for line in text.splitlines():
        parsed = _result_line(_ANSI.sub("", line))
        if parsed is not None:
            name, status = parsed
            results[name] = status
    return results


def _result_line(line: str) -> tuple[str, str] | None:
    if match := _STATUS_FIRST.match(line):
        status, name = match.groups()
        if status == TestStatus.SKIPPED and _SKIP_COUNT.match(name):
            return None
        return name, status
    if match := _TEST_FIRST.match(line):
        name, status = match.groups()
        return name, status
    return None
