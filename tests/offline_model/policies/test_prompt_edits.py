"""How the demo worker turns failures into rule edits."""

from __future__ import annotations

from flashrsi_dagster.offline_model.policies.prompt_edits import (
    Failure,
    pick_keywords,
    plan_edits,
)


def test_keywords_rank_by_how_many_texts_hold_them_then_alphabetically():
    texts = ["Lottery lottery lottery winner", "the lottery prize", "prize draw"]

    assert pick_keywords(texts, known=set()) == ["lottery", "prize", "draw"]


def test_short_stop_and_known_words_are_never_keywords():
    texts = ["Your free lottery, with your prize: 100% guaranteed"]

    assert pick_keywords(texts, known={"lottery"}) == ["free", "guaranteed", "prize"]


def test_a_rule_line_is_extended_keeping_its_final_full_stop():
    lines = ["Rules:", "- `spam` when the text mentions: prize."]

    [edit] = plan_edits(lines, [Failure("spam", "a lottery prize")])

    assert edit.rule is not None and edit.rule.line == lines[1]
    assert edit.new_line == "- `spam` when the text mentions: prize, lottery."


def test_labels_without_a_rule_get_a_new_line_one_edit_per_label():
    failures = [Failure("spam", "lottery"), Failure("billing", "invoice overdue")]

    edits = plan_edits(["Default label: ham"], failures)

    assert [edit.new_line for edit in edits] == [
        "- billing when the text mentions: invoice, overdue",
        "- spam when the text mentions: lottery",
    ]
