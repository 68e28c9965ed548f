"""Fixtures the sabotage rounds share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from flashrsi_dagster.gateway import Gateway
from tests.contamination.test_detector import BENCHMARK, SPLITS, TASKS, ContentCheck, Harness
from tests.gateway.misbehaving_endpoint import MisbehavingEndpoint


@pytest.fixture(scope="module")
def content_check(tmp_path_factory) -> Harness:
    """A seed of the built-in MiniAgent harness in a real snapshot store, and the contamination
    check over the built-in corpus (every split), for one module's attacks."""
    check = ContentCheck(BENCHMARK, lambda: TASKS, SPLITS)
    return Harness(tmp_path_factory.mktemp("contamination"), check)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[MisbehavingEndpoint]:
    """A misbehaving endpoint on loopback, its behaviour set by each attack."""
    with MisbehavingEndpoint() as running:
        yield running


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    """One gateway for a module's attacks: it must keep serving after each."""
    with Gateway() as running:
        yield running
