"""The rollout engine: concurrency, the infrastructure ladder, fixed denominators, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.benchmarks.base import SystemicFault
from flashrsi_dagster.benchmarks.text_classification import TextClassification
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import RecordStore, Redactor, Status
from flashrsi_dagster.rollouts.engine import Settings, run_rollouts
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.rollouts.scores import scores_frame, summary
from tests.conftest import wait_until

LABELS = ["ham", "spam"]


@pytest.fixture
def benchmark(tmp_path: Path) -> TextClassification:
    data = tmp_path / "data.jsonl"
    rows = [{"id": f"t{i}", "text": f"message {i}", "label": LABELS[i % 2]} for i in range(6)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return TextClassification(data)


def _agent(url: str, model: str):
    role = RoleConfig.model_validate(
        {"type": "llm", "llm": {"model": model, "base_url": url, "max_retries": 0}}
    )
    return target_agent(role)


def _record(tmp_path: Path) -> RolloutRecord:
    return RolloutRecord(tmp_path / "rollouts.jsonl", RecordStore(tmp_path, Redactor()))


def test_every_task_is_scored_and_wrong_answers_are_not_rerun(benchmark, tmp_path):
    with OfflineModelServer(ServerConfig()) as server:
        server.add_script("labels", [{"text": "spam"}] * 6)
        progress = []
        final = run_rollouts(
            benchmark,
            _agent(server.url, "simulator/script:labels"),
            benchmark.tasks(),
            _record(tmp_path),
            split="dev",
            settings=Settings(concurrency=3),
            progress=lambda done, total, t: progress.append((done, total)),
        )
        requests = len(server.requests)

    assert requests == 6
    assert [t.task_id for t in final] == [f"t{i}" for i in range(6)]
    assert {t.status for t in final} == {Status.SUCCESS, Status.FAILURE}
    assert summary(scores_frame(final), 6)["score"] == 0.5
    assert sorted(progress) == [(n, 6) for n in range(1, 7)]


def test_infrastructure_failures_are_rerun_twice_then_score_zero(benchmark, tmp_path):
    with OfflineModelServer(ServerConfig(failure_rate=1.0, failure_kinds=("500",))) as server:
        final = run_rollouts(
            benchmark,
            _agent(server.url, "simulator/echo"),
            benchmark.tasks(),
            _record(tmp_path),
            split="dev",
            settings=Settings(concurrency=2),
        )
        requests = len(server.requests)

    assert requests == 6 * 3
    assert all(t.status == Status.INFRA_ERROR and t.score == 0.0 for t in final)
    assert [t.metadata["rerun"] for t in final] == [2] * 6
    table = summary(scores_frame(final), n_tasks=6)
    assert (table["score"], table["tasks"], table["missing"]) == (0.0, 6, 0)
    assert len(_record(tmp_path).load()) == 18


def test_a_recovered_infrastructure_failure_keeps_its_rerun_count(benchmark, tmp_path):
    task = benchmark.tasks()[1]
    with OfflineModelServer(ServerConfig()) as server:
        server.add_script("flaky", [{"error": 500}, {"error": 503}, {"text": "spam"}])
        final = run_rollouts(
            benchmark,
            _agent(server.url, "simulator/script:flaky"),
            [task],
            _record(tmp_path),
            split="dev",
            settings=Settings(concurrency=1),
        )

    assert (final[0].status, final[0].score, final[0].metadata["rerun"]) == (Status.SUCCESS, 1.0, 2)


def test_a_restart_runs_only_what_is_missing(benchmark, tmp_path):
    tasks = benchmark.tasks()
    with OfflineModelServer(ServerConfig()) as server:
        agent = _agent(server.url, "simulator/echo")
        run_rollouts(benchmark, agent, tasks[:4], _record(tmp_path), split="dev")
        server.clear_requests()
        final = run_rollouts(benchmark, agent, tasks, _record(tmp_path), split="dev")
        assert len(server.requests) == 2

    assert [t.task_id for t in final] == [t.id for t in tasks]


_KILLABLE = textwrap.dedent("""
    import sys
    from pathlib import Path
    from flashrsi_dagster.agents import target_agent
    from flashrsi_dagster.benchmarks.text_classification import TextClassification
    from flashrsi_dagster.config import RoleConfig
    from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
    from flashrsi_dagster.records import RecordStore, Redactor
    from flashrsi_dagster.rollouts.engine import Settings, run_rollouts
    from flashrsi_dagster.rollouts.record import RolloutRecord

    data, record = Path(sys.argv[1]), Path(sys.argv[2])
    bench = TextClassification(data)
    # the 14 rollouts left take 3.5 s at least, however fast: the kill lands before the end
    with OfflineModelServer(ServerConfig(latency_ms=500)) as server:
        role = RoleConfig.model_validate({"type": "llm", "llm": {
            "model": "simulator/echo", "base_url": server.url, "max_retries": 0}})
        run_rollouts(bench, target_agent(role), bench.tasks(),
                     RolloutRecord(record, RecordStore(record.parent, Redactor())),
                     split="dev",
                     settings=Settings(concurrency=2))
""")


def test_sigkill_half_way_then_restart_loses_and_repeats_nothing(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"t{i}", "text": f"m {i}", "label": "ham"}) + "\n" for i in range(20)
        )
    )
    record_path = tmp_path / "rollouts.jsonl"
    engine = subprocess.Popen(
        [sys.executable, "-c", _KILLABLE, str(data), str(record_path)], start_new_session=True
    )
    wait_until(
        lambda: record_path.exists() and record_path.read_text().count("\n") >= 6,
        "six rollouts recorded",
    )
    os.killpg(engine.pid, signal.SIGKILL)
    engine.wait()
    survived = {t.task_id for t in RolloutRecord(record_path).load()}
    assert 6 <= len(survived) < 20

    bench = TextClassification(data)
    with OfflineModelServer(ServerConfig()) as server:
        final = run_rollouts(
            bench,
            _agent(server.url, "simulator/echo"),
            bench.tasks(),
            RolloutRecord(record_path, RecordStore(tmp_path, Redactor())),
            split="dev",
        )
        rerun = len(server.requests)

    assert rerun == 20 - len(survived)
    assert sorted(t.task_id for t in final) == sorted(f"t{i}" for i in range(20))
    lines = RolloutRecord(record_path).load()
    assert len(lines) == 20
    assert len({t.task_id for t in lines}) == 20
    RecordStore(tmp_path, Redactor()).verify()  # the crash left the chain consistent


class _NoEngine(TextClassification):
    """A benchmark whose environment cannot exist on this machine."""

    def rollout(self, agent, task, *, split, attempt):
        raise SystemicFault("no container engine here")


def test_a_systemic_fault_stops_the_evaluation_instead_of_scoring_zero(benchmark, tmp_path):
    broken = _NoEngine(benchmark.data_path)
    with OfflineModelServer(ServerConfig()) as server:
        agent = _agent(server.url, "simulator/echo")
        with pytest.raises(SystemicFault, match="no container engine"):
            run_rollouts(broken, agent, broken.tasks(), _record(tmp_path), split="dev")

    assert _record(tmp_path).load() == []
