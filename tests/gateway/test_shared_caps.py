"""A role's caps hold across the processes sharing an experiment's call log (candidates side by
side, each run in its own process): their spends and their calls in flight count, and a
process killed mid-call leaves nothing held. Each other gateway is a real OS process
(`gateway_process.py`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from flashrsi_dagster.config.models import PriceConfig
from flashrsi_dagster.gateway import Caps
from tests.conftest import PATIENCE
from tests.gateway.conftest import openai_client

PROCESS = Path(__file__).with_name("gateway_process.py")
CALL = {"model": "simulator/echo", "messages": [{"role": "user", "content": "hello there"}]}
# simulator/echo on CALL: 3 input and 3 output tokens a call.


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen]]:
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(10)


def _start(processes: list[subprocess.Popen], **spec) -> subprocess.Popen:
    """A gateway process on the spec's log, serving its run (see gateway_process.py)."""
    process = subprocess.Popen(
        [sys.executable, str(PROCESS), json.dumps(spec)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    processes.append(process)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def _go(process: subprocess.Popen) -> None:
    assert process.stdin is not None
    process.stdin.write("go\n")
    process.stdin.flush()


def _statuses(process: subprocess.Popen) -> list[int]:
    assert process.stdout is not None
    statuses = json.loads(process.stdout.readline())
    assert process.wait(PATIENCE) == 0
    return statuses


def _chat(gateway, token: str):
    return openai_client(gateway, token).chat.completions.create(**CALL, max_tokens=3)


def test_two_processes_stop_together_at_the_roles_cap(log_path, simulator, processes):
    """Each alone would spend the whole cap; together they spend it once, and cross it by at
    most one call (a call alone may cross the cap; calls in flight reserve)."""
    spec = {"log": str(log_path), "upstream": simulator.url, "max_tokens": 120}
    both = [_start(processes, **spec, calls="until capped") for _ in range(2)]
    for process in both:
        _go(process)
    statuses = [_statuses(process) for process in both]

    answered = [line for line in _lines(log_path) if line["status"] == 200]
    spent = sum(line["input_tokens"] + line["output_tokens"] for line in answered)
    assert 120 <= spent <= 120 + 6
    assert [s[-1] for s in statuses] == [402, 402]
    assert sum(s.count(200) for s in statuses) == len(answered)


def test_a_call_in_flight_elsewhere_holds_its_reservation_until_its_process_dies(
    gateway, log_path, upstream_of, recorder, processes
):
    """A process killed (SIGKILL) mid-call cannot release what its call reserved: its
    reservation goes with it, and the role's next call is let through."""
    recorder.hold()
    other = _start(processes, log=str(log_path), upstream=recorder.url, max_tokens=50, calls=1)
    _go(other)
    assert recorder.arrived.wait(PATIENCE)  # in flight, reserving 3 output tokens and its input
    gateway.set_caps("x", "worker", Caps(max_tokens=50))
    token = gateway.grant(experiment="x", role="worker", run_id="r2", upstream=upstream_of())

    with pytest.raises(openai.APIStatusError, match=r"\(used 0, with calls in flight") as held:
        _chat(gateway, token)
    assert held.value.status_code == 402
    os.kill(other.pid, signal.SIGKILL)
    assert other.wait(PATIENCE) == -signal.SIGKILL

    assert _chat(gateway, token).usage.total_tokens == 6
    swept = log_path.with_suffix(".reserved").iterdir()
    assert not [path.name for path in swept if f".{other.pid}-" in path.name]


def test_unpriced_calls_of_another_process_leave_a_usd_cap_refusing(
    gateway, log_path, simulator, upstream_of, processes
):
    """A USD cap over calls of unknown cost cannot be kept: once another process's run of the
    role made unpriced calls, the role's next call is refused, as after a restart."""
    gateway.set_caps("x", "worker", Caps(max_usd=1.0))
    price = PriceConfig(input_per_mtok=1, output_per_mtok=1)
    token = gateway.grant(
        experiment="x", role="worker", run_id="r2", upstream=upstream_of(price=price)
    )
    _chat(gateway, token)  # priced: counted, well under the cap

    other = _start(processes, log=str(log_path), upstream=simulator.url, calls=1)
    _go(other)
    assert _statuses(other) == [200]

    with pytest.raises(openai.APIStatusError, match=r"its cost is unknown \(unpriced calls\)"):
        _chat(gateway, token)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("planted", ["link", "fifo"])
def test_a_link_or_a_fifo_planted_among_the_reservations_is_ignored_and_left_alone(
    gateway, log_path, upstream_of, tmp_path, planted
):
    """The reservations folder is in a shared home: what is no gateway's plain file is not
    read through, opened to hang, swept, or counted."""
    target = tmp_path / "elsewhere"
    target.write_text('[["x", "worker", 1000000]]')
    folder = log_path.with_suffix(".reserved")
    folder.mkdir(parents=True, exist_ok=True)
    thing = folder / "otherhost.00000000.1-1.0"
    if planted == "link":
        thing.symlink_to(target)
    else:
        os.mkfifo(thing)
    gateway.set_caps("x", "worker", Caps(max_tokens=100))
    token = gateway.grant(experiment="x", role="worker", run_id="r1", upstream=upstream_of())

    assert _chat(gateway, token).usage.total_tokens == 6  # the planted million not counted
    assert thing.is_symlink() if planted == "link" else thing.exists()
    assert target.read_text() == '[["x", "worker", 1000000]]'
