"""Redaction: known secret values, secret-named environment values and key shapes."""

from __future__ import annotations

import logging

import pytest

from flashrsi_dagster.records import (
    REDACTED,
    RecordStore,
    RedactingFilter,
    Redactor,
    Trajectory,
    read_record,
)


def test_known_values_secret_named_env_vars_and_key_shapes_are_redacted():
    redactor = Redactor(
        ["config-secret-1234"],
        environ={"MY_SERVICE_TOKEN": "env-token-98765", "HOME": "/root", "PATH": "/usr/bin"},
    )

    text = redactor.text(
        "a config-secret-1234 b env-token-98765 c sk-proj-abcdefghijklmnop1234 "
        "d Bearer eyJhbGciOiJIUzI1NiJ9.payload e /root /usr/bin"
    )

    assert text == (f"a {REDACTED} b {REDACTED} c {REDACTED} d Bearer {REDACTED} e /root /usr/bin")


def test_short_values_are_not_treated_as_secrets():
    redactor = Redactor(["1"], environ={"DEBUG_TOKEN": "true"})

    assert redactor.text("1 true") == "1 true"


def test_keys_that_name_a_step_or_a_run_are_not_secrets():
    # Dagster's Docker executor sets DAGSTER_RUN_STEP_KEY=evaluation in each step container.
    environ = {"DAGSTER_RUN_STEP_KEY": "evaluation", "OPENAI_API_KEY": "sk-live-secret-value"}
    redactor = Redactor(environ=environ)

    text = redactor.text("benchmarks/swe_bench/evaluation.py sk-live-secret-value")

    assert text == f"benchmarks/swe_bench/evaluation.py {REDACTED}"


def test_nested_values_and_keys_are_redacted():
    redactor = Redactor(["hunter2hunter2"], environ={})

    value = redactor.value(
        {
            "messages": [{"content": "pw hunter2hunter2"}],
            "hunter2hunter2": 3,
            "n": 1.5,
            "none": None,
        }
    )

    assert value == {
        "messages": [{"content": f"pw {REDACTED}"}],
        REDACTED: 3,
        "n": 1.5,
        "none": None,
    }


def test_records_are_written_redacted(tmp_path):
    redactor = Redactor(["leaky-secret-value"], environ={})
    trajectory = Trajectory(
        task_id="t",
        split="dev",
        snapshot_id="s",
        status="error",
        messages=[{"role": "assistant", "content": "key is leaky-secret-value"}],
        metadata={"env": "leaky-secret-value"},
        error={"type": "RuntimeError", "message": "auth leaky-secret-value failed"},
    )

    RecordStore(tmp_path, redactor).write(tmp_path / "t.json", trajectory)

    raw = (tmp_path / "t.json").read_text()
    assert "leaky-secret-value" not in raw
    restored = read_record(tmp_path / "t.json", Trajectory)
    assert restored.error.message == f"auth {REDACTED} failed"


def test_logging_filter_redacts_messages_arguments_and_tracebacks(caplog):
    logger = logging.getLogger("flashrsi.test.redaction")
    logger.addFilter(RedactingFilter(Redactor(["log-secret-value"], environ={})))
    try:
        with caplog.at_level(logging.INFO, logger=logger.name):
            logger.info("calling with %s", "log-secret-value")
            try:
                raise ValueError("bad key log-secret-value")
            except ValueError:
                logger.exception("failed")
    finally:
        logger.filters.clear()

    assert "log-secret-value" not in caplog.text
    assert REDACTED in caplog.text


IDS = [
    "task-classification-item-00",
    "ask-for-the-password-001",
    "risk-assessment-0123456789abcdef",
    "desk-0123456789abcdefghij",
    "flask-app-test-suite-0123456789",
]
KEYS = [
    "sk-proj-" + "Ab1" * 11,
    "sk-ant-api03-" + "x9" * 20,
    "sk-" + "0123456789abcdefABCDEF",
    "AKIA" + "ABCDEFGHIJ012345",
    "ghp_" + "a1" * 18,
    "github_pat_" + "B2_" * 12,
    "xoxb-1234567890-abcdef",
    "hf_" + "Z" * 34,
    "AIza" + "Sy" * 17 + "_",
]


@pytest.mark.parametrize("task_id", IDS)
def test_ids_that_merely_contain_a_key_prefix_pass_unchanged(task_id, caplog):
    redactor = Redactor(["a-known-secret-value"], environ={})
    record = {"task_id": task_id, "messages": [{"content": f"solved {task_id}."}]}
    logger = logging.getLogger("flashrsi.test.redaction.ids")
    logger.addFilter(RedactingFilter(redactor))
    try:
        with caplog.at_level(logging.INFO, logger=logger.name):
            logger.info("task %s done", task_id)
    finally:
        logger.filters.clear()

    assert redactor.text(f"running {task_id} now") == f"running {task_id} now"
    assert redactor.value(record) == record
    assert redactor.value({task_id: 1.0}) == {task_id: 1.0}
    assert caplog.records[0].getMessage() == f"task {task_id} done"


@pytest.mark.parametrize("key", KEYS)
def test_key_shapes_are_redacted_as_whole_tokens(key):
    redactor = Redactor(environ={})

    for context in ("{}", "key={}", '"{}"', "({}).", "/tmp/{}/x", "{}\n"):
        text = context.format(key)
        assert redactor.text(text) == context.format(REDACTED), text
    assert redactor.value({"content": f"use {key}"}) == {"content": f"use {REDACTED}"}


def test_a_key_shape_glued_to_a_longer_token_is_not_a_key():
    redactor = Redactor(environ={})
    glued = ["x" + KEYS[0], KEYS[3] + "Z", KEYS[3] + "-v2", "my_" + KEYS[4], KEYS[8] + "q"]

    assert [redactor.text(text) for text in glued] == glued


@pytest.mark.parametrize(
    "header",
    [
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
        "authorization: bearer abc+def/ghi~jkl.mnop==",
    ],
)
def test_bearer_tokens_are_redacted_whole(header):
    scheme = header.rsplit(" ", 1)[0]

    assert Redactor(environ={}).text(header) == f"{scheme} {REDACTED}"


def test_identity_fields_keep_key_shapes_but_never_known_secret_values():
    secret = "config-secret-1234"
    redactor = Redactor([secret], environ={})
    shaped = KEYS[2]

    value = redactor.value(
        {
            "task_id": shaped,
            "snapshot_ids": [shaped],
            "files_dir": f"/runs/{shaped}/files",
            "metadata": {"parent_id": shaped, "note": shaped},
            "data_path": f"/data/{secret}.jsonl",
            "content": shaped,
            shaped: 1,
        }
    )

    assert value == {
        "task_id": shaped,
        "snapshot_ids": [shaped],
        "files_dir": f"/runs/{shaped}/files",
        "metadata": {"parent_id": shaped, "note": REDACTED},
        "data_path": f"/data/{REDACTED}.jsonl",
        "content": REDACTED,
        shaped: 1,
    }


def test_a_record_keyed_by_task_ids_round_trips_through_a_file(tmp_path):
    redactor = Redactor(environ={})
    trajectory = Trajectory(
        task_id=IDS[0],
        split="dev",
        snapshot_id="s",
        status="success",
        messages=[{"role": "user", "content": f"Classify {IDS[1]}"}],
        metadata={"scores": {task_id: 1.0 for task_id in IDS}},
    )

    RecordStore(tmp_path, redactor).write(tmp_path / "t.json", trajectory)

    assert read_record(tmp_path / "t.json", Trajectory) == trajectory
