"""A candidate's diff against its parent, from a real snapshot store (real git)."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from flashrsi_dagster.views import diff_markdown
from flashrsi_dagster.views.diffs import LONG_LINE


@pytest.fixture
def edit(store, make_harness, tmp_path):
    """Commits a checkout of the seed after `change(folder)`; returns (seed id, child id)."""

    def commit(change, files=None):
        seed = store.create_seed(make_harness(files))
        work = store.check_out(seed, tmp_path / "work")
        change(work)
        outcome = store.commit_child(seed, work, message="edit")
        assert outcome.status == "committed", outcome.reason
        return seed.id, outcome.snapshot.id

    return commit


def _body(markdown: str) -> list[str]:
    """The lines inside the ```diff block."""
    inside = markdown.split("```diff\n", 1)[1].split("\n```", 1)[0]
    return inside.splitlines()


def test_a_small_diff_is_shown_whole_with_binary_files_named_not_dumped(store, edit):
    binary = bytes(range(256)) * 4

    def change(work):
        (work / "prompts/system.md").write_text("You are a very careful classifier.\n")
        (work / "runtime/model.bin").write_bytes(binary)
        (work / "runtime/run.sh").unlink()

    parent, child = edit(change)

    markdown = diff_markdown(store, parent, child)

    assert markdown.startswith("**3 files changed**: +1 -3 lines; binary (named, not shown): ")
    assert "`runtime/model.bin`" in markdown.splitlines()[0]
    assert _body(markdown) == store.diff(parent, child).splitlines()
    assert "Binary files /dev/null and b/runtime/model.bin differ" in _body(markdown)
    assert "+You are a very careful classifier." in _body(markdown)
    assert "**Cut**" not in markdown


def test_a_long_diff_is_cut_at_a_line_boundary_with_what_was_left_out(store, edit):
    def change(work):
        for name in ("a", "b", "c", "d", "e", "f", "g"):
            lines = "".join(f"{name} line {i}\n" for i in range(600))
            (work / f"prompts/{name}.md").write_text(lines)

    parent, child = edit(change)
    whole = store.diff(parent, child).splitlines()

    markdown = diff_markdown(store, parent, child, max_chars=5_000)

    assert len(markdown) <= 5_000
    kept = _body(markdown)
    assert kept == whole[: len(kept)] and 0 < len(kept) < len(whole)
    note = markdown.rsplit("\n\n", 1)[1]
    assert note.startswith(f"**Cut** after {len(kept):,} of {len(whole):,} lines: ")
    assert f"{len(whole) - len(kept):,} left out, the rest of `prompts/a.md`" in note
    assert "6 more files (`prompts/b.md`, `prompts/c.md`" in note and "and 1 more" in note
    command = note.split("The whole diff: `", 1)[1].rstrip("`\n")
    printed = subprocess.run(shlex.split(command), capture_output=True, text=True, check=True)
    assert printed.stdout.splitlines() == whole


def test_a_fence_in_a_harness_file_does_not_close_the_diff_block(store, edit):
    def change(work):
        (work / "prompts/system.md").write_text("Answer as JSON:\n```\n{}\n```\n")

    parent, child = edit(change)

    markdown = diff_markdown(store, parent, child)

    assert "\n````diff\n" in markdown and markdown.rstrip().endswith("````")
    assert "+```" in markdown


def test_bytes_that_are_not_utf8_and_overlong_lines_stay_readable(store, edit):
    def change(work):
        (work / "prompts/latin1.md").write_bytes("café\n".encode("latin-1"))
        (work / "prompts/minified.md").write_text("x" * (LONG_LINE + 500) + "\n")

    parent, child = edit(change)

    markdown = diff_markdown(store, parent, child)

    markdown.encode("utf-8")  # no lone surrogates left
    assert "+caf\ufffd" in markdown
    assert f"+{'x' * (LONG_LINE - 1)} [… 501 more characters of this line]" in markdown


def test_no_change_says_so(store, make_harness):
    seed = store.create_seed(make_harness())

    assert diff_markdown(store, seed.id, seed.id).startswith("No change")
    with pytest.raises(ValueError, match="at least"):
        diff_markdown(store, seed.id, seed.id, max_chars=100)
