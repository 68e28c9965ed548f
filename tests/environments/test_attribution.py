"""Every call-log line of a run names the candidate the host granted the run for: set by the
host before the token exists, carried into the rollouts' threads, never the agent's word."""

from __future__ import annotations

import contextvars
import json
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.environments.attribution import work_for
from flashrsi_dagster.environments.confinement import Confinement, RunSpec
from flashrsi_dagster.gateway import Gateway, Upstream
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig

LLM = LLMConfig(model="simulator/echo", base_url="http://127.0.0.1:9/v1")
USER = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def simulator():
    with OfflineModelServer(ServerConfig()) as running:
        yield running


def _call(confinement: Confinement, role: str, upstream: Upstream, model: str) -> None:
    spec = RunSpec(role, LLM, writable=(), upstream=upstream)
    with confinement.granted(spec) as opening:
        client = openai.OpenAI(base_url=f"{opening.base_url}/v1", api_key=opening.token)
        client.chat.completions.create(model=model, messages=USER)


def test_each_line_names_the_candidate_the_host_worked_for(tmp_path, simulator):
    log = tmp_path / "gateway.jsonl"
    upstream = Upstream(simulator.url, "chat", "sk-test")
    with Gateway(log_path=log) as gateway:
        confinement = Confinement(jailed=False, experiment="x", gateway=gateway)

        def rollouts() -> None:  # as the rollout engine submits them: a context copy each
            with ThreadPoolExecutor(max_workers=2) as pool:
                futures = [
                    pool.submit(
                        contextvars.copy_context().run, _call, confinement, "target", upstream, m
                    )
                    for m in ("simulator/echo", "simulator/echo")
                ]
                for future in futures:
                    future.result()

        work_for("r001.c0")
        _call(confinement, "worker", upstream, "simulator/echo")
        rollouts()
        work_for("r001.c1")
        rollouts()
        work_for(None)  # the experiment's own step (a sealed test)
        _call(confinement, "target", upstream, "simulator/echo")

    lines = [json.loads(line) for line in log.read_text().splitlines()]
    named = [(line["role"], line["candidate"]) for line in lines]
    assert named == [
        ("worker", "r001.c0"), ("target", "r001.c0"), ("target", "r001.c0"),
        ("target", "r001.c1"), ("target", "r001.c1"), ("target", None),
    ]  # fmt: skip
    assert all(line["status"] == 200 for line in lines)
