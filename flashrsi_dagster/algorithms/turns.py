"""One step of an experiment at a time, across processes (the CLI, Dagster run workers), or
candidates of one round side by side (`experiment/lock.py`)."""

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


def side_by_side[**P, R](lock_name: Callable[P, str]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """For a step that may run beside other steps of its round (a candidate, writing only
    its own records): it holds the experiment's step lock shared, so no sequential step runs
    meanwhile, and the lock named `lock_name(*args)` (its candidate's) exclusively, so two
    runs of the same candidate wait for each other and the second reads the first's records.
    Its order check must accept any step the round has ready, not just the next one."""

    def decorate(step: Callable[P, R]) -> Callable[P, R]:
        @wraps(step)
        def locked(*args: P.args, **kwargs: P.kwargs) -> R:
            algorithm = args[0]
            experiment = algorithm.experiment  # type: ignore[attr-defined]
            waiting = lambda: algorithm.log(  # type: ignore[attr-defined]  # noqa: E731
                f"{step.__name__}: waiting for a sequential step or another run of this "
                "candidate to end"
            )
            own = experiment.lock(lock_name(*args, **kwargs))
            with experiment.step_lock.held(waiting, shared=True), own.held(waiting):
                replaced = experiment.config_replaced()
                if replaced is not None:
                    raise StepOrderError(replaced)
                return step(*args, **kwargs)

        return locked

    return decorate
