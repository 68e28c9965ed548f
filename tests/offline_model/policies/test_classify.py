"""`simulator/target`: its answer follows the rules its harness gives it."""

from __future__ import annotations

import json

import openai

from tests.offline_model.anthropic_wire import post_messages

TARGET = "simulator/target"
READ_SKILL = {
    "type": "function",
    "function": {"name": "read_skill", "parameters": {"type": "object"}},
}
PLAIN = "You are a careful classifier.\nDefault label: ham\n"
BETTER = (
    "You are a careful classifier.\n"
    "- spam when the text mentions: lottery, prize\n"
    "- `ham` when the text mentions: meeting\n"
    "Default label: ham\n"
)


def _classify(client: openai.OpenAI, system: str, text: str, **extra) -> str | None:
    completion = client.chat.completions.create(
        model=TARGET,
        messages=[
            {"role": "system", "content": system},
            {"role": "user", "content": f"Classify.\nLabels: spam, ham\nText: {text}"},
        ],
        **extra,
    )
    return completion.choices[0].message.content


def test_a_better_prompt_changes_the_answer(client):
    text = "You won the LOTTERY, claim your prize"

    assert _classify(client, PLAIN, text) == "ham"
    assert _classify(client, BETTER, text) == "spam"


def test_the_most_mentioned_label_wins_and_ties_go_to_the_first_rule(client):
    assert _classify(client, BETTER, "meeting about the lottery prize") == "spam"
    assert _classify(client, BETTER, "meeting about the lottery") == "spam"
    assert _classify(client, BETTER, "meeting, another meeting, a lottery") == "ham"


def test_without_a_match_or_default_the_first_allowed_label_is_answered(client):
    assert _classify(client, "- spam when the text mentions: prize", "hello") == "spam"
    assert _classify(client, "- other when the text mentions: hello", "hello") == "spam"


def test_without_labels_or_rules_the_answer_is_unknown(client):
    completion = client.chat.completions.create(
        model=TARGET, messages=[{"role": "user", "content": "what is this?"}]
    )

    assert completion.choices[0].message.content == "unknown"


def test_skills_are_read_with_read_skill_before_answering(client):
    system = (
        "You are a careful classifier.\nDefault label: ham\n\n"
        "## Skills\n- spam-signs: how to spot spam\n- tone: how to read tone\n"
    )
    question = {"role": "user", "content": "Labels: spam, ham\nText: cheap lottery tickets"}
    first = (
        client.chat.completions.create(
            model=TARGET,
            messages=[{"role": "system", "content": system}, question],
            tools=[READ_SKILL],
        )
        .choices[0]
        .message
    )
    bodies = {"spam-signs": "- spam when the text mentions: lottery", "tone": "Stay calm."}
    results = [
        {
            "role": "tool",
            "tool_call_id": call.id,
            "content": bodies[json.loads(call.function.arguments)["name"]],
        }
        for call in first.tool_calls
    ]
    answer = (
        client.chat.completions.create(
            model=TARGET,
            messages=[
                {"role": "system", "content": system},
                question,
                first.model_dump(exclude_none=True),
                *results,
            ],
            tools=[READ_SKILL],
        )
        .choices[0]
        .message
    )

    assert [c.function.name for c in first.tool_calls] == ["read_skill", "read_skill"]
    assert [c.function.arguments for c in first.tool_calls] == [
        '{"name": "spam-signs"}',
        '{"name": "tone"}',
    ]
    assert answer.tool_calls is None
    assert answer.content == "spam"


def test_skills_are_not_requested_when_no_read_skill_tool_is_offered(client):
    system = "Default label: ham\n## Skills\n- spam-signs: how to spot spam\n"

    assert _classify(client, system, "cheap lottery tickets") == "ham"


def test_the_same_rules_decide_through_the_anthropic_dialect(server):
    reply = post_messages(
        server.root_url,
        {
            "model": TARGET,
            "max_tokens": 10,
            "system": [{"type": "text", "text": BETTER}],
            "messages": [{"role": "user", "content": "Labels: spam, ham\nText: a lottery!"}],
        },
    ).json()

    assert reply["content"] == [{"type": "text", "text": "spam"}]


def test_the_same_rules_decide_through_the_responses_dialect(client):
    response = client.responses.create(
        model=TARGET, instructions=BETTER, input="Labels: spam, ham\nText: the prize is yours"
    )

    assert response.output_text == "spam"
