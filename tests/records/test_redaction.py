"""Redaction: known secret values, secret-named environment values and key shapes."""

from __future__ import annotations

import logging

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
