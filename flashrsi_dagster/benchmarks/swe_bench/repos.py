"""Where an instance's repository comes from, and checkouts of it at a commit.

No network reaches GitHub here (nor, for a harness, should it need to): a repository is read
from `repos/<owner>__<name>` beside the instance data (the folder `data_path` names, or the
folder of the file it names). That folder is either a git repository (a clone or mirror of
`github.com/<owner>/<name>`; any commit in it can be the base), or a plain tree of files made
into a one-commit repository with a fixed author, date and message, so that its commit id is
the same everywhere and can be an instance's `base_commit` (FlashRSI's own tiny set,
`examples/swe_bench_tiny`, is such a tree).

Git runs here only in repositories this module made: never in a folder an agent wrote, whose
`.git/config` could name a program for git to start (`core.fsmonitor`, a diff driver).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from flashrsi_dagster.benchmarks.base import SystemicFault, Task
from flashrsi_dagster.scratch import scratch_dir

REPOS_FOLDER = "repos"
GIT_TIMEOUT = 300.0
"""Seconds allowed for one git command (a clone of a large local mirror included)."""

FIXED_COMMIT = {
    "GIT_AUTHOR_NAME": "FlashRSI",
    "GIT_AUTHOR_EMAIL": "flashrsi@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_NAME": "FlashRSI",
    "GIT_COMMITTER_EMAIL": "flashrsi@example.invalid",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
}
"""Who and when for a plain tree's one commit: fixed, so the commit id depends on the files."""
TREE_MESSAGE = "base"
NOT_SOURCE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
_GIT_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "LANG": "C.UTF-8",
}


class RepositoryError(SystemicFault):
    """An instance's repository cannot be had here; no rerun changes that."""


def repo_folder_name(repo: str) -> str:
    """`owner/name` as a folder name, spelled as the official image names spell it."""
    return repo.replace("/", "__")


def find_source(repo: str, roots: list[Path]) -> Path:
    """The first `repos/<owner>__<name>` under `roots` that exists."""
    candidates = [root / REPOS_FOLDER / repo_folder_name(repo) for root in roots]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise RepositoryError(
        f"no local copy of the repository {repo}: looked in "
        f"{', '.join(map(str, candidates)) or 'no folder (no data_path)'}. Put a clone of "
        f"https://github.com/{repo} there (git clone --mirror works too), or a plain tree of "
        "its files at the base commit"
    )


def missing(tasks: Iterable[Task], roots: list[Path]) -> list[str]:
    """What keeps instances from being checked out here, one line per repository, naming the
    instances: no copy of their repository, or a copy without their base commit. Empty when
    every instance's base commit can be had (`flashrsi validate` says it before any run)."""
    by_repo: dict[str, list[Task]] = {}
    for task in tasks:
        by_repo.setdefault(task.verifier["repo"], []).append(task)
    problems = []
    for repo, group in by_repo.items():
        try:
            source = find_source(repo, roots)
        except RepositoryError as exc:
            problems.append(f"{_instances(group)}: {exc}")
            continue
        wanted = {task.verifier["base_commit"] for task in group}
        have = _commits_in(source, wanted)
        lacking = [task for task in group if task.verifier["base_commit"] not in have]
        if lacking and not _is_git(source):
            problems.append(
                f"{_instances(lacking)}: {source}: its files make the commit {min(have)}, not "
                f"the base_commit {lacking[0].verifier['base_commit']}; put the tree at that "
                "commit there (or a clone of the repository)"
            )
        elif lacking:
            commits = sorted({task.verifier["base_commit"] for task in lacking})
            problems.append(
                f"{_instances(lacking)}: {source} has no commit {', '.join(commits[:3])}"
                f"{' ...' if len(commits) > 3 else ''}; fetch them into that clone"
            )
    return problems


def _instances(tasks: list[Task], shown: int = 5) -> str:
    ids = [task.id for task in tasks]
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return f"instance{'s' if len(ids) > 1 else ''} {', '.join(ids[:shown])}{more}"


def _commits_in(source: Path, commits: set[str]) -> set[str]:
    """Those of `commits` that `source` has (a plain tree has the one it makes)."""
    if not _is_git(source):
        with scratch_dir("swe-tree-") as work:
            return {commit_tree(source, work / "repo")}
    asked = "".join(f"{commit}^{{commit}}\n" for commit in sorted(commits))
    done = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-c", "safe.directory=*",
         "cat-file", "--batch-check=%(objectname)"],
        cwd=source, env=_GIT_ENV, input=asked, capture_output=True, text=True,
        timeout=GIT_TIMEOUT, check=False,
    )  # fmt: skip
    return set(done.stdout.split()) & commits


def check_out(source: Path, commit: str, dest: Path) -> None:
    """A repository at `dest` with `commit` checked out, from `source` (see the module)."""
    if _is_git(source):
        git(dest.parent, "clone", "--quiet", "--no-checkout", str(source), str(dest))
        try:
            git(dest, "checkout", "--quiet", "--detach", commit)
        except subprocess.CalledProcessError:
            raise RepositoryError(f"{source}: has no commit {commit}") from None
        return
    made = commit_tree(source, dest)
    if made != commit:
        raise RepositoryError(
            f"{source}: its files make the commit {made}, not the instance's base_commit "
            f"{commit}; the tree or the instance record changed without the other"
        )


def commit_tree(source: Path, dest: Path) -> str:
    """`source`'s files committed as the one commit of a new repository at `dest`."""
    shutil.copytree(source, dest, symlinks=True, ignore=NOT_SOURCE)
    git(dest, "init", "--quiet")
    git(dest, "add", "--all")
    git(dest, "-c", "commit.gpgsign=false", "commit", "--quiet", "-m", TREE_MESSAGE)
    return git(dest, "rev-parse", "HEAD").strip()


def diff_against(base: Path, tree: Path) -> str:
    """The patch from `base` (a checkout this module made) to the files of `tree` (where an
    agent worked: read as files, its `.git` ignored), as `git diff` prints it, with binary
    files in git's binary format. `base` ends up holding `tree`'s files."""
    for entry in base.iterdir():
        if entry.name != ".git":
            _remove(entry)
    for entry in tree.iterdir():
        if entry.name != ".git":
            _copy(entry, base / entry.name)
    git(base, "add", "--all")
    return git(base, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "HEAD")


def git(cwd: Path, *args: str) -> str:
    env = {**_GIT_ENV, **FIXED_COMMIT}
    done = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-c", "safe.directory=*", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise subprocess.CalledProcessError(
            done.returncode, ["git", *args], done.stdout, done.stderr
        )
    return done.stdout


def _is_git(source: Path) -> bool:
    return (source / ".git").exists() or (source / "HEAD").is_file()  # a work tree or a mirror


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _copy(source: Path, target: Path) -> None:
    if source.is_symlink():
        os.symlink(os.readlink(source), target)
    elif source.is_dir():
        shutil.copytree(source, target, symlinks=True)
    elif source.is_file():
        shutil.copy2(source, target)
    # anything else (a FIFO, a socket an agent left) is not part of a patch
