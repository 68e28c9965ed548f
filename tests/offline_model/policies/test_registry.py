"""Model ids choose the policy: built-ins, scripts, and a 404 for anything else."""

from __future__ import annotations

import openai
import pytest


def test_echo_answers_with_the_last_user_text(client):
    completion = client.chat.completions.create(
        model="simulator/echo",
        messages=[
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [{"type": "text", "text": "second"}]},
        ],
    )

    assert completion.choices[0].message.content == "second"


def test_the_model_list_names_every_simulator_model(server, client):
    server.add_script("demo", ["hi"])

    ids = [model.id for model in client.models.list()]

    assert ids == [
        "simulator/echo",
        "simulator/target",
        "simulator/worker",
        "simulator/modular-worker",
        "simulator/reviewer",
        "simulator/evolver",
        "simulator/dgm",
        "simulator/stop",
        "simulator/sampling-worker",
        "simulator/script:demo",
    ]


def test_an_unknown_model_is_a_404_listing_the_available_ones(client):
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])

    assert "offline model simulator has no model 'gpt-4o'" in missing.value.body["message"]
    assert "simulator/echo" in missing.value.body["message"]
