"""The markdown pieces: content never breaks out of its fence or code span; cuts say so."""

from __future__ import annotations

from flashrsi_dagster.views.markup import clip, code, fence, one_line


def test_a_fence_is_longer_than_any_backtick_run_in_its_content():
    content = "Reply like this:\n```json\n{}\n```\n"

    block = fence(content, "diff")

    assert block.startswith("````diff\n") and block.endswith("\n````")
    assert block[len("````diff\n") : -len("````")] == content


def test_a_code_span_is_one_line_and_survives_backticks():
    assert code("ls\ncat `x`") == "`` ls ⏎ cat `x` ``"  # padded: it ends with a backtick
    assert code("a" * 50, 10) == "`aaaaaaaaa…`"
    assert one_line("  one\n  two  \n") == "one ⏎ two"


def test_clip_keeps_head_and_tail_evenly_and_counts_what_it_cut():
    text = "H" * 500 + "M" * 1000 + "T" * 500

    cut = clip(text, 400)

    assert len(cut) <= 400
    assert cut.startswith("H" * 180) and cut.endswith("T" * 180)
    assert "characters cut" in cut and "1,640" in cut
    assert clip("short", 400) == "short"
