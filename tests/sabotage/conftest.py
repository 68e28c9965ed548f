"""Fixtures the sabotage rounds share."""

from __future__ import annotations

import pytest

from tests.contamination.test_detector import BENCHMARK, SPLITS, TASKS, ContentCheck, Harness


@pytest.fixture(scope="module")
def content_check(tmp_path_factory) -> Harness:
    """A seed of the built-in MiniAgent harness in a real snapshot store, and the contamination
    check over the built-in corpus (every split), for one module's attacks."""
    check = ContentCheck(BENCHMARK, lambda: TASKS, SPLITS)
    return Harness(tmp_path_factory.mktemp("contamination"), check)
