from __future__ import annotations

from collections.abc import Iterator

import pytest

from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig


@pytest.fixture(scope="module")
def server() -> Iterator[OfflineModelServer]:
    """The offline model simulator, which the rollouts' scripted targets talk to."""
    with OfflineModelServer(ServerConfig()) as running:
        yield running
