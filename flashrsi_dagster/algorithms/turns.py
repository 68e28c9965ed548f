"""One step of an experiment at a time, across processes (the CLI, Dagster run workers)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from flashrsi_dagster.algorithms.base import StepOrderError


def one_step_at_a_time[**P, R](step: Callable[P, R]) -> Callable[P, R]:
    """Run an algorithm's method `step` holding the experiment's step lock, from its order
    check to its last write: a step launched meanwhile by another process waits, then reads
    the records. A config replaced since the algorithm was opened refuses the step."""

    @wraps(step)
    def locked(*args: P.args, **kwargs: P.kwargs) -> R:
        algorithm = args[0]
        waiting = lambda: algorithm.log(  # type: ignore[attr-defined]  # noqa: E731
            f"{step.__name__}: waiting for another run of this experiment to end its step"
        )
        experiment = algorithm.experiment  # type: ignore[attr-defined]
        with experiment.step_lock.held(waiting):
            replaced = experiment.config_replaced()
            if replaced is not None:
                raise StepOrderError(replaced)
            return step(*args, **kwargs)

    return locked
