"""A folder lent read-only into a run's writable folder (the Meta-Harness history, DGM's logs,
Best-of-N's evidence, ModularRSI's branches) is the same files to the run's commands whether
the run is jailed (a bind mount) or unconfined (a copy): never a symlink, which `find`,
`os.walk` and `cp -r` do not follow."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.environments.confinement import BASE_ENV, Confinement
from flashrsi_dagster.environments.jail import Mount
from tests.conftest import needs_jails

LLM = LLMConfig(model="simulator/echo", base_url="http://127.0.0.1:9/v1")
LISTING = "find .history -type f | sort; find .history -type l | sed 's/^/link /'"


@pytest.fixture
def lent(tmp_path: Path) -> tuple[Path, Path]:
    """A view of two rounds' records, and the edit folder it is lent into."""
    view = tmp_path / "view"
    (view / "trajectories/round-000").mkdir(parents=True)
    (view / "index.json").write_text("{}\n")
    (view / "trajectories/round-000/round.json").write_text('{"dev_score": 0.5}\n')
    for folder in (view, view / "trajectories", view / "trajectories/round-000"):
        folder.chmod(0o755)  # the jail user reads it
    edit = tmp_path / "edit"
    edit.mkdir()
    (edit / "prompt.md").write_text("be brief\n")
    return view, edit


def _listing(confinement: Confinement, view: Path, edit: Path, script: str = LISTING) -> str:
    mount = Mount(view, edit / ".history")
    with confinement.run("worker", LLM, writable=[edit], read_only=[mount]) as run:
        argv = ["/bin/sh", "-c", script]
        if run.jail is not None:
            argv = run.jail.enter_argv(argv, dict(BASE_ENV, HOME="/tmp"), edit)
        done = subprocess.run(argv, cwd=edit, capture_output=True, text=True, check=True)
    return done.stdout


def test_an_unconfined_run_sees_a_lent_folder_as_files_and_cannot_change_it(lent):
    view, edit = lent
    before = {p: p.read_bytes() for p in view.rglob("*") if p.is_file()}
    scribble = (
        "echo forged > .history/index.json; echo mine > .history/notes.md; chmod 500 .history"
    )

    seen = _listing(Confinement(jailed=False), view, edit, f"{LISTING}; {scribble}")

    assert seen.splitlines() == [
        ".history/index.json",
        ".history/trajectories/round-000/round.json",
    ]
    assert {p: p.read_bytes() for p in view.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in edit.iterdir()) == ["prompt.md"]  # the copy is gone


def test_a_link_an_unconfined_run_left_in_its_place_is_removed_not_followed(lent):
    view, edit = lent
    swap = "rm -rf .history && ln -s .. .history"

    _listing(Confinement(jailed=False), view, edit, swap)

    assert sorted(p.name for p in edit.iterdir()) == ["prompt.md"]
    assert (view / "index.json").exists() and (edit.parent / "view").exists()


@needs_jails
def test_jailed_and_unconfined_runs_see_the_same_lent_files(lent):
    view, edit = lent

    jailed = _listing(Confinement(jailed=True), view, edit)
    unconfined = _listing(Confinement(jailed=False), view, edit)

    assert jailed == unconfined
    assert sorted(p.name for p in edit.iterdir()) == ["prompt.md"]
