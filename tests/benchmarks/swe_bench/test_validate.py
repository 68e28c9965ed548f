"""`flashrsi validate` refuses a SWE-bench instance set whose repositories are not here at the
instances' base commits, naming the instances and what is missing, before any run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flashrsi_dagster.benchmarks.swe_bench import repos
from flashrsi_dagster.cli import main

ROOT = Path(__file__).parents[3]
EXAMPLE = ROOT / "examples" / "modular_rsi_swe_bench.yaml"
TINY = ROOT / "examples" / "swe_bench_tiny"
REPO = Path("repos") / "flashrsi__tinytext"
IDS = "instances flashrsi__tinytext-1, flashrsi__tinytext-2, flashrsi__tinytext-3"


def _validate(data: Path, home: Path, capsys, monkeypatch) -> tuple[int, str]:
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    args = ["validate", "--config", str(EXAMPLE), "--experiment.home", str(home)]
    args += ["--benchmark.data_path", str(data), "--experiment.confinement", "none"]
    code = main(args)
    return code, capsys.readouterr().err


def _tiny_without_repos(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(TINY / "instances.jsonl", data)
    return data


def test_the_tiny_set_with_its_repository_validates(tmp_path, capsys, monkeypatch):
    code, err = _validate(TINY, tmp_path / "home", capsys, monkeypatch)

    assert code == 0, err


def test_no_copy_of_the_repository_is_refused_naming_the_instances(tmp_path, capsys, monkeypatch):
    data = _tiny_without_repos(tmp_path)

    code, err = _validate(data, tmp_path / "home", capsys, monkeypatch)

    assert code == 2
    [line] = err.splitlines()
    assert line.startswith(f"error: benchmark.data_path: {IDS}: no local copy of the repository")
    assert str(data / REPO) in line
    assert not (tmp_path / "home").exists()


def test_a_tree_that_is_not_the_base_commit_is_refused(tmp_path, capsys, monkeypatch):
    data = _tiny_without_repos(tmp_path)
    shutil.copytree(TINY / REPO, data / REPO)
    (data / REPO / "tinytext" / "slug.py").write_text("# changed\n")

    code, err = _validate(data, tmp_path / "home", capsys, monkeypatch)

    assert code == 2
    assert f"{IDS}: {data / REPO}: its files make the commit" in err
    assert "not the base_commit" in err


@pytest.mark.parametrize("with_base", [True, False], ids=["has-it", "lacks-it"])
def test_a_clone_must_hold_the_base_commit(tmp_path, capsys, monkeypatch, with_base):
    data = _tiny_without_repos(tmp_path)
    base = repos.commit_tree(TINY / REPO, tmp_path / "upstream")
    if with_base:
        repos.git(
            tmp_path, "clone", "--quiet", "--mirror", str(tmp_path / "upstream"), str(data / REPO)
        )
    else:  # a repository of another history: the instances' commit is not in it
        shutil.copytree(TINY / REPO, tmp_path / "other")
        (tmp_path / "other" / "README.md").write_text("other\n")
        repos.commit_tree(tmp_path / "other", data / REPO)

    code, err = _validate(data, tmp_path / "home", capsys, monkeypatch)

    if with_base:
        assert code == 0, err
    else:
        assert code == 2
        assert f"{IDS}: {data / REPO} has no commit {base}" in err
