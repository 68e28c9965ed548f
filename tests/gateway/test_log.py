"""The call log: one line per request, flushed; no key, no token, no body, whatever a run does."""

from __future__ import annotations

import fcntl
import json
import os
import threading

import httpx2
import openai
import pytest

from flashrsi_dagster.gateway import Caps, Gateway
from flashrsi_dagster.gateway.log import CallLog, CallRecord
from flashrsi_dagster.records import Redactor
from flashrsi_dagster.records.atomic import PlantedFileError
from tests.conftest import PATIENCE
from tests.gateway.conftest import CANARY_KEY, USER, log_lines, openai_client


def test_every_call_is_logged_without_the_key_or_the_token(gateway, upstream_of, log_path):
    token = gateway.grant(experiment="x", role="worker", run_id="r1", upstream=upstream_of())
    client = openai_client(gateway, token)
    client.chat.completions.create(model="simulator/echo", messages=USER)
    list(client.chat.completions.create(model="simulator/echo", messages=USER, stream=True))
    # A hostile run writes its token where the log would copy it.
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model=f"{token}/{CANARY_KEY}", messages=USER)
    gateway.revoke(token)
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="simulator/echo", messages=USER)

    text = log_path.read_text()
    assert CANARY_KEY not in text and token not in text and "hello there" not in text
    lines = log_lines(log_path)
    assert [(e["status"], e["stream"]) for e in lines] == [
        (200, False), (200, True), (404, False), (401, False)
    ]  # fmt: skip
    first = lines[0]
    assert first["experiment"] == "x" and first["role"] == "worker" and first["run_id"] == "r1"
    assert first["model"] == "simulator/echo" and first["path"] == "/v1/chat/completions"
    assert (first["input_tokens"], first["output_tokens"]) == (3, 3)
    assert len(first["token_id"]) == 12 and first["duration_ms"] > 0
    assert lines[-1]["error"] == "gateway: token revoked: run 'r1' has ended"


def test_the_given_redactor_guards_every_line(tmp_path, upstream_of):
    log_path = tmp_path / "gateway.jsonl"
    with Gateway(log_path=log_path, redactor=Redactor(["private-model-name"])) as gateway:
        token = gateway.grant(experiment="x", role="r", run_id="r1", upstream=upstream_of())
        httpx2.post(
            f"{gateway.url}/v1/chat/completions",
            json={"model": "private-model-name", "messages": USER},
            headers={"authorization": f"Bearer {token}"},
        )

    assert log_lines(log_path)[0]["model"] == "[REDACTED]"


def test_a_roles_spending_in_the_log_counts_against_its_cap_after_a_restart(tmp_path, upstream_of):
    """A resumed experiment's gateway is a new one: what the log says the role used counts."""
    log_path = tmp_path / "gateway.jsonl"
    with Gateway(log_path=log_path) as first:
        token = first.grant(experiment="x", role="worker", run_id="r1", upstream=upstream_of())
        openai_client(first, token).chat.completions.create(model="simulator/echo", messages=USER)
    with log_path.open("a") as log:
        log.write('{"torn": \n')  # a crash mid-line is skipped

    with Gateway(log_path=log_path) as second:
        assert second.usage(experiment="x", role="worker").input_tokens == 0  # runs: this one's
        second.set_caps("x", "worker", Caps(max_tokens=6))
        token = second.grant(experiment="x", role="worker", run_id="r2", upstream=upstream_of())
        with pytest.raises(openai.APIStatusError, match="reached its cap of 6 tokens"):
            openai_client(second, token).chat.completions.create(
                model="simulator/echo", messages=USER
            )


def test_a_line_after_a_torn_tail_starts_a_line_of_its_own(tmp_path, upstream_of):
    """A gateway killed mid-line leaves a tail without its newline: the next line must not be
    glued to it, or every gateway reading the log would lose that call's spend."""
    log_path = tmp_path / "gateway.jsonl"
    log_path.write_text('{"torn": ')

    with Gateway(log_path=log_path) as gateway:
        token = gateway.grant(experiment="x", role="worker", run_id="r1", upstream=upstream_of())
        openai_client(gateway, token).chat.completions.create(model="simulator/echo", messages=USER)

    torn, line = log_path.read_text().splitlines()
    assert torn == '{"torn": ' and json.loads(line)["input_tokens"] == 3


def test_a_line_is_appended_under_the_logs_lock_which_other_hosts_hold_too(tmp_path):
    """Gateways of candidates side by side (on several machines sharing the home, where
    O_APPEND alone does not keep lines whole) append to one log under its flock."""
    path = tmp_path / "gateway.jsonl"
    log, written = CallLog(path, None), threading.Event()
    other = os.open(path, os.O_RDWR)
    fcntl.flock(other, fcntl.LOCK_EX)  # another process's gateway, mid-line
    writer = threading.Thread(
        target=lambda: (log.write(CallRecord("POST", "/v1/x", experiment="x")), written.set())
    )
    writer.start()
    assert not written.wait(0.5) and path.read_text() == ""
    fcntl.flock(other, fcntl.LOCK_UN)
    assert written.wait(PATIENCE)
    writer.join()
    os.close(other)
    log.close()
    assert [line["path"] for line in log_lines(path)] == ["/v1/x"]


@pytest.mark.parametrize("planted", ["link", "fifo"])
def test_a_log_planted_as_a_link_or_a_fifo_stops_the_gateway_and_changes_nothing(tmp_path, planted):
    """A home shared with unconfined containers: a link in the log's place would have root
    append to what it names, a FIFO would hang the gateway reading what was spent."""
    victim, log_path = tmp_path / "victim", tmp_path / "gateway.jsonl"
    victim.write_text("precious\n")
    if planted == "link":
        log_path.symlink_to(victim)
    else:
        os.mkfifo(log_path)

    with pytest.raises(PlantedFileError, match=r"gateway\.jsonl is"):
        Gateway(log_path=log_path)

    assert victim.read_text() == "precious\n"
