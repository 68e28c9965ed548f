"""The budget a control spends, fixed once, when its seed is evaluated: given in the config,
or read from the experiment it `matches` (every role's spend but the target's, from that
experiment's gateway log: `controls.spend`), a key given in the config overriding the one read.
The matched experiment is opened read-only through the registry, to say whether its search was
over; it may be of any algorithm."""

from __future__ import annotations

from pathlib import Path

from flashrsi_dagster.algorithms.best_of_n.config import BestOfNConfig
from flashrsi_dagster.algorithms.best_of_n.records import BudgetRecord
from flashrsi_dagster.controls.spend import TARGET, improvement, spend_by_role
from flashrsi_dagster.controls.stored import open_stored

SEARCH_OVER = frozenset({"promote", "sealed_test", "done"})


class BudgetError(ValueError):
    """A budget that cannot be fixed: the message names the key."""


def fixed_budget(config: BestOfNConfig, home: Path) -> BudgetRecord:
    given = config.budget
    if config.matches is None:
        return BudgetRecord(
            model_calls=given.model_calls if given else None,
            tokens=given.tokens if given else None,
            samples=config.cap,
        )
    experiment = open_stored(home, config.matches, "algorithm.matches")
    by_role = spend_by_role(experiment.paths.gateway_log, config.matches)
    matched = {role: spend for role, spend in by_role.items() if role != TARGET}
    if not matched:
        raise BudgetError(
            f"algorithm.matches: experiment {config.matches!r} under {home} recorded no model "
            f"call of any role but the target ({experiment.paths.gateway_log}): there is no "
            "budget to match"
        )
    total = improvement(matched)
    calls = given.model_calls if given and given.model_calls is not None else total.model_calls
    tokens = given.tokens if given and given.tokens is not None else total.tokens
    return BudgetRecord(
        model_calls=calls,
        tokens=tokens,
        samples=config.cap,
        matches=config.matches,
        matched=matched,
        matched_search_over=_search_over(experiment),
    )


def _search_over(experiment) -> bool:
    from flashrsi_dagster.algorithms.registry import open_algorithm

    algorithm = open_algorithm(experiment, log=lambda _: None)
    try:
        return algorithm.next_step(algorithm.read_state()).action in SEARCH_OVER
    finally:
        algorithm.close()
