"""One step of an experiment at a time, across processes (the CLI, Dagster run workers), or
candidates of one round side by side (`experiment/lock.py`).

A step holds its turn with `with turn(self, "promote"):` around its body; a context manager
adds no frame between a step and what it calls, and a step made of steps holds the lock once
more (it is reentrant). `one_step_at_a_time` and `side_by_side` are the same turn, declared
over a whole method."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from functools import wraps
from typing import Any

from flashrsi_dagster.algorithms.base import StepOrderError


@contextmanager
def turn(algorithm: Any, step: str, *, beside: str | None = None) -> Iterator[None]:
    """Hold `algorithm`'s experiment's step lock for `step`, from its order check to its last
    write: a step launched meanwhile by another process waits, then reads the records. With
    `beside` (a candidate's lock name), for a step that may run beside the others of its
    round, writing only its candidate's records: the step lock shared, so no sequential step
    runs meanwhile, and the candidate's lock exclusive, so two runs of one candidate wait for
    each other and the second reads the first's records (its order check must accept any
    step the round has ready). A config replaced since the algorithm was opened refuses it."""
    experiment = algorithm.experiment
    waiting = lambda: algorithm.log(  # noqa: E731
        f"{step}: waiting for a sequential step or another run of this candidate to end"
        if beside
        else f"{step}: waiting for another run of this experiment to end its step"
    )
    own = experiment.lock(beside).held(waiting) if beside else nullcontext()
    with experiment.step_lock.held(waiting, shared=beside is not None), own:
        replaced = experiment.config_replaced()
        if replaced is not None:
            raise StepOrderError(replaced)
        yield


def one_step_at_a_time[**P, R](step: Callable[P, R]) -> Callable[P, R]:
    """The whole method `step` in its `turn`, exclusively."""

    @wraps(step)
    def locked(*args: P.args, **kwargs: P.kwargs) -> R:
        with turn(args[0], step.__name__):
            return step(*args, **kwargs)

    return locked


def side_by_side[**P, R](lock_name: Callable[P, str]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """The whole method in its `turn` beside its round's other candidates, `lock_name(*args)`
    naming its candidate's lock."""

    def decorate(step: Callable[P, R]) -> Callable[P, R]:
        @wraps(step)
        def locked(*args: P.args, **kwargs: P.kwargs) -> R:
            with turn(args[0], step.__name__, beside=lock_name(*args, **kwargs)):
                return step(*args, **kwargs)

        return locked

    return decorate
