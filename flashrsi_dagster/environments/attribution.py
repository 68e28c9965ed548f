"""Which candidate the host is working for, so that every run's gateway token, and each line
of the gateway's call log it causes, names that candidate (`r001.c0`).

The host sets it in its own process as a step of a candidate begins (`orchestration/context.py`
from the step's partition) and the confinement reads it as it grants a run's token
(`confinement.Confinement.granted`): the name is fixed before the agent has a token and lives
only in the host's memory, so no agent can choose or change what its calls are counted to.
A step of the whole experiment (a promotion, the sealed test) sets None. Rollouts run on
threads of their own, each started with a copy of the context it was submitted from
(`rollouts/engine.py`)."""

from __future__ import annotations

from contextvars import ContextVar

_CANDIDATE: ContextVar[str | None] = ContextVar("flashrsi_candidate", default=None)


def work_for(candidate: str | None) -> None:
    """Runs granted from now on in this context (and in threads it starts with a copy of
    it) are `candidate`'s; None: the experiment's own."""
    _CANDIDATE.set(candidate)


def working_for() -> str | None:
    return _CANDIDATE.get()
