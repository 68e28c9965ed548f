"""The harness text format both demo policies read."""

from __future__ import annotations

from flashrsi_dagster.offline_model.policies.rules import (
    default_label,
    listed_skills,
    parse_rules,
    task,
)


def test_rule_lines_in_their_accepted_spellings():
    text = (
        "Intro line that mentions nothing.\n"
        "- spam when the text mentions: Lottery, prize.\n"
        "* `ham` When The Text Mentions: meeting, 'lunch'\n"
        "billing when the text mentions: invoice\n"
    )

    rules = [(rule.label, rule.keywords) for rule in parse_rules(text)]

    assert rules == [
        ("spam", ("lottery", "prize")),
        ("ham", ("meeting", "lunch")),
        ("billing", ("invoice",)),
    ]


def test_default_label_is_the_first_default_line():
    assert default_label("x\nDefault label: `ham`.\nDefault label: spam") == "ham"
    assert default_label("no default here") is None


def test_the_task_text_follows_text_and_labels_are_listed():
    message = "Classify the message.\nText: Win big\nnow!\nLabels: spam, `ham`"

    assert task(message) == ("Win big\nnow!", ["spam", "ham"])
    assert task("just this") == ("just this", [])


def test_skills_are_the_items_under_a_skills_line():
    system = (
        "- spam when the text mentions: lottery\n"
        "## Skills\n\n- spam-signs: how to spot spam\n* `tone`: reading tone\n"
        "Other prose ends the list.\n- later: not a skill\n"
    )

    assert listed_skills(system) == ["spam-signs", "tone"]


def test_prose_may_sit_between_the_skills_heading_and_its_list():
    # The layout MiniAgent renders into its system prompt.
    system = (
        "You are MiniAgent.\n\n## Skills\n"
        "Call read_skill with a skill's name to read it before relying on it.\n"
        "- labels: the label set\n- spam-signs: how to spot spam\n\n## Task\n- x: y\n"
    )

    assert listed_skills(system) == ["labels", "spam-signs"]
    assert listed_skills("## Skills\nNone yet.\n## Notes\n- a: b\n") == []
