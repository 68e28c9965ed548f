"""`ServerConfig` refuses what it does not know and what makes no sense."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from flashrsi_dagster.offline_model import ServerConfig


def test_defaults_are_a_quiet_reliable_loopback_server():
    config = ServerConfig()

    assert (config.host, config.port) == ("127.0.0.1", 0)
    assert (config.latency_ms, config.failure_rate, config.scripts) == (0, 0, {})
    assert config.failure_kinds == ("429", "500", "hang")


@pytest.mark.parametrize(
    "fields",
    [
        {"latency": 5},
        {"failure_rate": 1.5},
        {"failure_kinds": ("503",)},
        {"failure_kinds": ()},
        {"port": 70000},
        {"jitter_ms": -1},
    ],
)
def test_invalid_settings_are_refused(fields):
    with pytest.raises(ValidationError):
        ServerConfig(**fields)
