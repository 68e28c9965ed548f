"""apply_patch: Codex's patch format, applied whole or not at all, never outside the cwd."""

from __future__ import annotations

import re

import pytest


def _patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"])


def test_add_update_move_and_delete_in_one_patch(core, tmp_path):
    (tmp_path / "keep.txt").write_text("one\ntwo\nthree\nfour\n")
    (tmp_path / "old.txt").write_text("a\nb\n")
    (tmp_path / "gone.txt").write_text("bye\n")
    text = _patch(
        "*** Add File: new/hello.txt",
        "+hello",
        "+world",
        "*** Update File: keep.txt",
        "@@",
        " one",
        "-two",
        "+TWO",
        " three",
        "@@",
        "-four",
        "+FOUR",
        "*** End of File",
        "*** Update File: old.txt",
        "*** Move to: moved.txt",
        "@@",
        " a",
        "-b",
        "+B",
        "*** Delete File: gone.txt",
    )

    summary = core.apply_patch.apply(text, tmp_path)

    assert summary.splitlines() == [
        "Success. Updated the following files:",
        "A new/hello.txt",
        "M keep.txt",
        "M moved.txt",
        "D gone.txt",
    ]
    assert (tmp_path / "new/hello.txt").read_text() == "hello\nworld\n"
    assert (tmp_path / "keep.txt").read_text() == "one\nTWO\nthree\nFOUR\n"
    assert (tmp_path / "moved.txt").read_text() == "a\nB\n"
    assert not (tmp_path / "old.txt").exists() and not (tmp_path / "gone.txt").exists()


def test_context_matches_despite_trailing_space(core, tmp_path):
    (tmp_path / "f.py").write_text("def f():  \n    return 1\n")
    core.apply_patch.apply(
        _patch("*** Update File: f.py", "@@ def f():", "-    return 1", "+    return 2"), tmp_path
    )
    assert (tmp_path / "f.py").read_text() == "def f():  \n    return 2\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("*** Add File: a.txt\n+x\n*** End Patch", "must start with `*** Begin Patch`"),
        ("*** Begin Patch\n*** Add File: a.txt\n+x", "must end with `*** End Patch`"),
        (_patch(), "changes no file"),
        (_patch("*** Add File: a.txt", "x"), "line 3: an added file's lines must start with `+`"),
        (_patch("*** Rename File: a.txt"), "line 2: expected `*** Add File:`"),
        (_patch("*** Update File: keep.txt", "@@", "?what"), "line 4: a hunk line must start"),
        (_patch("*** Update File: keep.txt"), "has no hunk"),
        (_patch("*** Update File: keep.txt", "@@", "-absent", "+x"), "hunk 1 does not match"),
        (_patch("*** Update File: missing.txt", "@@", "-a", "+b"), "does not exist"),
        (_patch("*** Add File: keep.txt", "+x"), "already exists"),
        (_patch("*** Delete File: missing.txt"), "does not exist"),
    ],
)
def test_a_malformed_or_unmatched_patch_is_refused_and_changes_nothing(
    core, tmp_path, text, message
):
    (tmp_path / "keep.txt").write_text("keep\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(core.apply_patch.PatchError, match=re.escape(message)):
        core.apply_patch.apply(text, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "keep.txt").read_text() == "keep\n"


def test_a_later_failure_leaves_earlier_operations_unapplied(core, tmp_path):
    text = _patch("*** Add File: first.txt", "+1", "*** Delete File: missing.txt")
    with pytest.raises(core.apply_patch.PatchError):
        core.apply_patch.apply(text, tmp_path)
    assert not (tmp_path / "first.txt").exists()


@pytest.mark.parametrize("name", ["/etc/passwd", "../outside.txt", "a/../../outside.txt", "link/x"])
def test_paths_that_leave_the_cwd_are_refused(core, tmp_path, name):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "link").symlink_to(tmp_path)  # a link out of the cwd
    with pytest.raises(core.apply_patch.PatchError, match=r"absolute|leaves the working folder"):
        core.apply_patch.apply(_patch(f"*** Add File: {name}", "+x"), cwd)
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "x").exists()
