"""Local copies of an instance's repository: a git clone at any of its commits, or a plain
tree made into one commit whose id does not depend on the machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.benchmarks.swe_bench import repos


def _tree(root: Path, text: str) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text(text)
    return root


def test_a_clone_is_checked_out_at_the_instances_commit(tmp_path):
    source = _tree(tmp_path / "source", "x = 1\n")
    first = repos.commit_tree(source, tmp_path / "clone")
    (tmp_path / "clone" / "pkg" / "mod.py").write_text("x = 2\n")
    repos.git(tmp_path / "clone", "commit", "--quiet", "-am", "second")

    repos.check_out(tmp_path / "clone", first, tmp_path / "work")

    assert (tmp_path / "work" / "pkg" / "mod.py").read_text() == "x = 1\n"
    with pytest.raises(repos.RepositoryError, match="has no commit 0000000"):
        repos.check_out(tmp_path / "clone", "0000000", tmp_path / "other")


def test_a_plain_tree_makes_the_same_commit_anywhere_and_a_changed_one_is_refused(tmp_path):
    one = repos.commit_tree(_tree(tmp_path / "a", "x = 1\n"), tmp_path / "made-a")
    again = repos.commit_tree(_tree(tmp_path / "b", "x = 1\n"), tmp_path / "made-b")
    assert one == again

    changed = _tree(tmp_path / "c", "x = 3\n")
    with pytest.raises(repos.RepositoryError, match=f"not the instance's base_commit {one}"):
        repos.check_out(changed, one, tmp_path / "work")


def test_the_agents_changes_are_a_patch_with_new_and_deleted_files(tmp_path):
    base = tmp_path / "base"
    repos.commit_tree(_tree(tmp_path / "source", "x = 1\n"), base)
    agent = _tree(tmp_path / "agent", "x = 2\n")
    (agent / "NEW.txt").write_text("new\n")
    (agent / ".git").mkdir()  # the agent's own repository is never read
    (agent / ".git" / "config").write_text("[core]\n\tfsmonitor = false\n")

    patch = repos.diff_against(base, agent)

    assert "-x = 1\n+x = 2\n" in patch and "+++ b/NEW.txt" in patch and ".git/" not in patch
    gone = tmp_path / "gone"
    gone.mkdir()
    assert "deleted file mode" in repos.diff_against(base, gone)


def test_a_missing_copy_names_where_it_was_looked_for(tmp_path):
    with pytest.raises(repos.RepositoryError) as error:
        repos.find_source("octo/cat", [tmp_path / "data"])

    assert str(tmp_path / "data" / "repos" / "octo__cat") in str(error.value)
