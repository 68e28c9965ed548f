"""Trajectory: the rollout record round-trips through JSON, YAML-only values included."""

from __future__ import annotations

import datetime as dt
import json

from flashrsi_dagster.records import ErrorInfo, Status, Trajectory, Usage


def _trajectory(**overrides) -> Trajectory:
    fields = dict(
        task_id="task-1",
        split="dev",
        snapshot_id="a" * 40,
        attempt=1,
        status=Status.FAILURE,
        answer="spam",
        score=0.0,
        messages=[
            {"role": "user", "content": "classify"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "function": {"name": "shell"}}],
            },
        ],
        usage=Usage(input_tokens=120, output_tokens=30, cost=0.002, turns=2, tool_calls=1),
        duration=1.25,
        metadata={
            "labels": ["a", "b"],
            "seen": dt.date(2024, 1, 2),
            "raw": b"\x00\x01",
            "ids": {3, 4},
        },
    )
    fields.update(overrides)
    return Trajectory(**fields)


def test_round_trips_through_json_exactly():
    original = _trajectory(error=ErrorInfo(type="ValueError", message="bad label"))

    restored = Trajectory.model_validate_json(original.model_dump_json())

    assert restored == original
    assert restored.metadata["seen"] == dt.date(2024, 1, 2)
    assert restored.metadata["raw"] == b"\x00\x01"
    assert restored.metadata["ids"] == {3, 4}


def test_json_form_is_plain_json_with_type_and_schema_version():
    data = json.loads(_trajectory().model_dump_json())

    assert data["kind"] == "trajectory"
    assert data["schema_version"] == 1
    assert data["status"] == "failure"
    assert data["metadata"]["seen"] == {"type": "yaml", "value": "2024-01-02\n...\n"}
    assert data["usage"] == {
        "input_tokens": 120,
        "output_tokens": 30,
        "cost": 0.002,
        "turns": 2,
        "tool_calls": 1,
        "model_calls": None,
    }


def test_a_literal_tagged_mapping_survives_the_round_trip():
    tricky = {"type": "yaml", "value": "not: encoded"}
    original = _trajectory(metadata={"user": tricky})

    assert Trajectory.model_validate_json(original.model_dump_json()).metadata["user"] == tricky


def test_error_info_keeps_the_traceback():
    try:
        raise TimeoutError("model call exceeded 120 s")
    except TimeoutError as exc:
        info = ErrorInfo.from_exception(exc)

    assert info.type == "TimeoutError"
    assert "120 s" in info.message
    assert "raise TimeoutError" in info.traceback


def test_usage_adds_up_and_keeps_unknown_cost_unknown():
    total = Usage(input_tokens=1, turns=1) + Usage(output_tokens=2, tool_calls=3)

    assert (total.input_tokens, total.output_tokens, total.turns, total.tool_calls) == (1, 2, 1, 3)
    assert total.cost is None
    assert (Usage(cost=0.5) + Usage()).cost == 0.5
    # the gateway's call count: unknown on either side leaves the sum unknown
    assert (Usage(model_calls=2) + Usage(model_calls=3)).model_calls == 5
    assert (Usage(model_calls=2) + Usage()).model_calls is None
