"""Scripts: replies in order, one per request, a clear error when exhausted or malformed."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from flashrsi_dagster.offline_model import OfflineModelServer, ScriptError, ServerConfig


def _ask(client: openai.OpenAI, model: str) -> str | None:
    completion = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "next"}]
    )
    return completion.choices[0].message.content


def test_replies_come_in_order_then_exhaustion_is_a_400_naming_the_script(server, client):
    model = server.add_script("two", ["first", {"text": "second"}])

    answers = [_ask(client, model), _ask(client, model)]
    with pytest.raises(openai.BadRequestError) as exhausted:
        _ask(client, model)

    assert model == "simulator/script:two"
    assert answers == ["first", "second"]
    assert "simulator script 'two'" in exhausted.value.body["message"]
    assert "it had 2 replies" in exhausted.value.body["message"]


def test_a_script_file_is_loaded_from_config_yaml_or_json(tmp_path: Path):
    (tmp_path / "a.yaml").write_text(
        "- text: from yaml\n- tool_calls:\n    - name: shell\n      arguments: {command: ls}\n"
    )
    (tmp_path / "b.json").write_text('[{"text": "from json"}]')
    config = ServerConfig(scripts={"a": tmp_path / "a.yaml", "b": tmp_path / "b.json"})

    with OfflineModelServer(config) as server:
        client = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
        first = _ask(client, "simulator/script:a")
        call = (
            client.chat.completions.create(
                model="simulator/script:a", messages=[{"role": "user", "content": "go"}]
            )
            .choices[0]
            .message.tool_calls[0]
        )
        from_json = _ask(client, "simulator/script:b")

    assert first == "from yaml"
    assert (call.function.name, call.function.arguments) == ("shell", '{"command": "ls"}')
    assert from_json == "from json"


def test_a_scripted_error_becomes_that_http_error(server, client):
    model = server.add_script("flaky", [{"error": 500}, "recovered"])

    with pytest.raises(openai.InternalServerError) as failed:
        _ask(client, model)

    assert failed.value.status_code == 500
    assert _ask(client, model) == "recovered"


def test_add_script_replaces_a_script_and_starts_it_over(server, client):
    server.add_script("again", ["old"])
    _ask(client, "simulator/script:again")
    server.add_script("again", ["new"])

    assert _ask(client, "simulator/script:again") == "new"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("text: not a list\n", "expected a list of replies, got dict"),
        ("- text: ok\n- {}\n", "item 1: reply: Value error, a reply needs `text`, `tool_calls`"),
        ("- tool_calls: [{name: shell, arguments: 'ls'}]\n", "item 0: tool_calls.0.arguments"),
        ("- tool_calls: [{arguments: {}}]\n", "item 0: tool_calls.0.name: Field required"),
        ("- text: hi\n  txet: typo\n", "item 0: txet: Extra inputs are not permitted"),
        ("- error: 200\n", "item 0: error: Input should be greater than or equal to 400"),
        ("- [unclosed\n", "not valid YAML or JSON"),
    ],
)
def test_invalid_script_files_are_refused_naming_file_and_item(tmp_path, content, problem):
    path = tmp_path / "script.yaml"
    path.write_text(content)

    with pytest.raises(ScriptError) as refused:
        OfflineModelServer(ServerConfig(scripts={"bad": path}))

    assert str(refused.value).startswith(f"{path}: ")
    assert problem in str(refused.value)


def test_a_missing_script_file_is_named(tmp_path):
    with pytest.raises(ScriptError, match=r"missing\.yaml: cannot read the script file"):
        OfflineModelServer(ServerConfig(scripts={"gone": tmp_path / "missing.yaml"}))
