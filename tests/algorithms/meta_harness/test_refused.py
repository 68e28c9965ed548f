"""A refused edit's code is kept as a bounded diff; the hostile folder is read carefully."""

from __future__ import annotations

import os

from flashrsi_dagster.algorithms.meta_harness import refused
from flashrsi_dagster.algorithms.meta_harness.refused import WITHHELD, refused_diff
from flashrsi_dagster.snapshots import Refusal


def _folders(tmp_path):
    seed, edit = tmp_path / "seed", tmp_path / "edit"
    for root in (seed, edit):
        (root / "prompts").mkdir(parents=True)
        (root / "prompts/system.md").write_text("line one\n")
    return seed, edit


def test_the_diff_shows_changed_added_binary_and_symlinked_files(tmp_path):
    seed, edit = _folders(tmp_path)
    (edit / "prompts/system.md").write_text("line one\nline two\n")
    (edit / "notes.txt").write_text("scratch\n")
    (edit / "blob.bin").write_bytes(b"\xff\xfe\x00")
    os.symlink("/etc/passwd", edit / "link")
    (edit / ".history").mkdir()
    (edit / ".history/index.json").write_text("{}")  # the history is never part of an edit
    diff = refused_diff(seed, edit, [Refusal("notes.txt", "not a declared component file")])
    assert "+++ b/prompts/system.md" in diff and "+line two" in diff
    assert "--- /dev/null\n+++ b/notes.txt" in diff and "+scratch" in diff
    assert "Binary file blob.bin differs" in diff
    assert "link: absent -> symlink to '/etc/passwd' (not followed)" in diff
    assert ".history" not in diff and "root:" not in diff


def test_a_secret_refusal_keeps_no_code(tmp_path):
    seed, edit = _folders(tmp_path)
    (edit / "prompts/system.md").write_text("c2stdGVzdA==\n")
    assert refused_diff(seed, edit, [Refusal("prompts/system.md", "base64", "secret")]) == WITHHELD


def test_the_diff_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(refused, "MAX_DIFF_CHARS", 200)
    seed, edit = _folders(tmp_path)
    for i in range(20):
        (edit / f"f{i:02d}.txt").write_text(f"file {i}\n")
    diff = refused_diff(seed, edit, [])
    assert len(diff) < 400 and "more changed file(s) not shown (diff bounded)" in diff
