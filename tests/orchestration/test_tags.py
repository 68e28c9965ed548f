"""A run's tags: its candidate, and each model endpoint its roles call under a key of its own
in the home, never with a credential."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.config import load_config
from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.tags import (
    ENDPOINT_KEYS,
    EndpointNumbers,
    endpoint_of,
    endpoint_tags,
)

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"


@pytest.mark.parametrize(
    ("base_url", "api", "endpoint"),
    [
        (
            "https://api.example.com/v1?api-version=1",  # the query is no part of it
            "chat",
            "https://api.example.com:443",
        ),
        ("http://127.0.0.1:8080/v1", "chat", "http://127.0.0.1:8080"),
        ("http://[::1]:9000/v1", "responses", "http://[::1]:9000"),
        ("http://models.internal", "chat", "http://models.internal:80"),
        ("https://API.Example.com.:443/v1", "chat", "https://api.example.com:443"),
        ("offline", "chat", "offline"),
        (None, "chat", "https://api.openai.com:443"),
        (None, "anthropic", "https://api.anthropic.com:443"),
    ],
)
def test_an_endpoint_is_its_scheme_host_and_port(base_url, api, endpoint):
    assert endpoint_of(LLMConfig(model="m", base_url=base_url, api=api)) == endpoint


def _config(home: Path, worker: str, target: str = "offline"):
    overrides = ["--experiment.home", str(home), "--agent.llm.base_url", target]
    return load_config(EXAMPLE, [*overrides, "--algorithm.worker.llm.base_url", worker])


def test_each_endpoint_of_a_home_has_one_key_whatever_role_calls_it(tmp_path):
    both = endpoint_tags(_config(tmp_path, "offline"), tmp_path)
    split = endpoint_tags(_config(tmp_path, "https://w.example.com/v1?api-version=p"), tmp_path)
    swapped = endpoint_tags(_config(tmp_path, "offline", "https://w.example.com"), tmp_path)

    assert both == {"flashrsi/endpoint.1": "offline"}  # one endpoint, counted once
    assert split == {
        "flashrsi/endpoint.1": "offline",
        "flashrsi/endpoint.2": "https://w.example.com:443",
    }
    assert swapped == split  # the Worker's endpoint as the target's: the same counter
    assert "api-version=p" not in (tmp_path / ".dagster" / "endpoints.json").read_text()


NUMBER = """
import sys
from pathlib import Path
from flashrsi_dagster.orchestration.tags import EndpointNumbers
numbers = EndpointNumbers(Path(sys.argv[1]))
for n in range(int(sys.argv[2]), int(sys.argv[2]) + 5):
    numbers.of([f"http://h{n}:1"])
"""


def test_processes_numbering_at_once_never_give_one_number_twice(tmp_path):
    writers = [
        subprocess.Popen([sys.executable, "-c", NUMBER, str(tmp_path), str(5 * i)])
        for i in range(3)
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0]

    numbers = EndpointNumbers(tmp_path).of([f"http://h{n}:1" for n in range(15)])
    assert sorted(numbers.values()) == list(range(1, 16))


def test_a_home_with_every_number_given_refuses_one_more_endpoint(tmp_path):
    numbers = EndpointNumbers(tmp_path)
    numbers.of([f"http://h{n}:1" for n in range(ENDPOINT_KEYS)])
    with pytest.raises(ValueError, match="no number left for 'http://late:1'"):
        numbers.of(["http://late:1"])


def test_a_round_steps_run_names_its_candidate():
    request = defs_for("meta_harness").request("exp", Step("propose", 3, "c1"), {"k": "v"})
    assert request is not None
    assert request.tags["flashrsi/round"] == "3" and request.tags["flashrsi/candidate"] == "c1"
    assert request.tags["flashrsi/experiment"] == "exp" and request.tags["k"] == "v"
    finalize = defs_for("meta_harness").request("exp", Step("promote"))
    assert finalize is not None and "flashrsi/round" not in finalize.tags
