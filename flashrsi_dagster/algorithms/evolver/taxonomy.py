"""The failure taxonomy: WHY classes (what went wrong) crossed with WHERE (the lever a fix
pulls, bound from files: `where.py`). A benchmark we ship has a table here; any other gets one
by two-stage induction from its own cold-start failures — the model proposes classes from
samples, then consolidates them into a table — and an induction that fails, or yields fewer
than the classes the SOP asks for, is an explicit error, never another benchmark's table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flashrsi_dagster.algorithms.evolver import markers

MIN_WHY_CLASSES = 7
_NAME = re.compile(r"^[a-z][a-z0-9_]{1,40}$")


class TaxonomyError(RuntimeError):
    """No usable taxonomy: the message says why (and which benchmark)."""


class WhyClass(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=_NAME.pattern)
    description: str = Field(min_length=1)


class Taxonomy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    benchmark: str
    source: str = Field(description="`builtin`, or `induced` from this experiment's failures.")
    whys: tuple[WhyClass, ...]

    def names(self) -> tuple[str, ...]:
        return tuple(w.name for w in self.whys)

    def require(self, minimum: int = MIN_WHY_CLASSES) -> Taxonomy:
        names = self.names()
        if len(set(names)) != len(names):
            raise TaxonomyError(f"{self.benchmark}: duplicate WHY classes in {names}")
        if len(names) < minimum:
            raise TaxonomyError(
                f"{self.benchmark}: the taxonomy has {len(names)} WHY classes, the SOP needs "
                f"at least {minimum}"
            )
        return self


def _table(benchmark: str, rows: Sequence[tuple[str, str]]) -> Taxonomy:
    whys = tuple(WhyClass(name=n, description=d) for n, d in rows)
    return Taxonomy(benchmark=benchmark, source="builtin", whys=whys).require()


BUILTIN = {
    "text_classification": _table(
        "text_classification",
        [
            ("missing_cue", "the text carries a cue for its label that no rule names"),
            ("misleading_cue", "a rule's keyword points to another label in this context"),
            ("wrong_default", "no rule fired and the default label was wrong"),
            ("label_overlap", "two labels' rules both fire and the wrong one wins"),
            ("answer_format", "the answer is not one bare label from the allowed set"),
            ("instruction_ignored", "the agent did not follow the task's instruction"),
            ("tool_detour", "the agent spent turns on tools instead of answering"),
            ("turn_limit", "the run ended at the turn limit without an answer"),
        ],
    ),
    "terminal_bench": _table(
        "terminal_bench",
        [
            ("misread_task", "the agent solved a different problem than the one asked"),
            ("environment_unknown", "the agent assumed tools, paths or packages that are absent"),
            ("command_error", "a command failed and the agent did not recover"),
            ("incomplete_solution", "part of the required end state is missing"),
            ("unverified_finish", "the agent stopped without checking its result"),
            ("context_loss", "earlier observations were lost or ignored later in the run"),
            ("timeout_or_loop", "the agent looped or ran out of time or turns"),
        ],
    ),
    "swe_bench": _table(
        "swe_bench",
        [
            ("wrong_location", "the patch edits the wrong file or function"),
            ("misread_issue", "the patch addresses a different behaviour than the issue"),
            ("incomplete_fix", "the fix covers some cases the tests check but not all"),
            ("regression", "the patch breaks behaviour other tests rely on"),
            ("no_reproduction", "the agent never reproduced the bug before patching"),
            ("syntax_or_import", "the patched code does not import or run"),
            ("timeout_or_loop", "the agent looped or ran out of time or turns"),
        ],
    ),
}


def builtin(benchmark: str) -> Taxonomy | None:
    return BUILTIN.get(benchmark)


Ask = Callable[[str], str]
"""A model call: an instruction in, the final answer out."""

PROPOSE = """\
{phase} induce
Below are failed runs of an agent on the benchmark {benchmark}, each with its task, its answer
and what was expected. Propose the classes of WHY these runs failed: short snake_case names,
each with a one-line description, general enough to hold several failures, specific enough to
suggest a fix. Answer with one JSON object: {{"whys": [{{"name": ..., "description": ...}}]}}

{samples}
"""

CONSOLIDATE = """\
{phase} consolidate
These WHY classes were proposed for failures on the benchmark {benchmark}. Merge duplicates and
near-duplicates, drop classes no failure would fall into, and keep between {minimum} and 14
classes that do not overlap. Answer with one JSON object: {{"whys": [{{"name": ...,
"description": ...}}]}}

{proposed}
"""


def induce(benchmark: str, samples: Sequence[str], ask: Ask, minimum: int = MIN_WHY_CLASSES):
    """Two-stage induction: propose from the samples, then consolidate; a TaxonomyError when
    either answer is unusable or the result is too small."""
    if not samples:
        raise TaxonomyError(f"{benchmark}: no failures to induce a taxonomy from")
    text = "\n\n".join(f"--- failure {i + 1}\n{s}" for i, s in enumerate(samples))
    proposed = _whys(
        ask(PROPOSE.format(phase=markers.EVOLVER_PHASE, benchmark=benchmark, samples=text)),
        benchmark,
        "propose",
    )
    listing = "\n".join(f"- {w.name}: {w.description}" for w in proposed)
    prompt = CONSOLIDATE.format(
        phase=markers.EVOLVER_PHASE, benchmark=benchmark, minimum=minimum, proposed=listing
    )
    final = _whys(ask(prompt), benchmark, "consolidate")
    return Taxonomy(benchmark=benchmark, source="induced", whys=tuple(final)).require(minimum)


def _whys(answer: str, benchmark: str, stage: str) -> list[WhyClass]:
    start, end = answer.find("{"), answer.rfind("}")
    try:
        value = json.loads(answer[start : end + 1]) if 0 <= start < end else None
        return [WhyClass.model_validate(w) for w in value["whys"]]  # type: ignore[index]
    except (ValueError, TypeError, KeyError, ValidationError) as exc:
        raise TaxonomyError(
            f"{benchmark}: taxonomy induction failed at the {stage} stage: the answer is not "
            f'{{"whys": [{{"name", "description"}}]}} ({type(exc).__name__})'
        ) from None
