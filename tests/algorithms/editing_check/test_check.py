"""The editing check: fixed tasks, each run by a real MiniAgent on a scratch folder against
the offline simulator, verified by the host. An agent whose editor lost `str_replace` fails
it, whatever the agent says (attack: a harness that weakens its own editing ability)."""

from __future__ import annotations

import shutil
from pathlib import Path

from flashrsi_dagster.agents import worker_agent
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.algorithms.editing_check.check import editing_check
from flashrsi_dagster.algorithms.editing_check.tasks import TASKS
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.llm.endpoints import offline_server


def _agent(harness: Path):
    server = offline_server()
    llm = {"model": "simulator/dgm", "base_url": server.url, "max_retries": 0}
    return worker_agent(RoleConfig.model_validate({"type": "miniagent", "llm": llm}), harness)


def _copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(HARNESS, tmp_path / "harness"))


def test_the_shipped_miniagent_passes_every_editing_task(tmp_path):
    with _agent(_copy(tmp_path)) as agent:
        verdict = editing_check(agent, snapshot_id="abc", log=lambda _: None)

    assert verdict.passed, verdict.reason
    assert [t.name for t in verdict.tasks] == [t.name for t in TASKS]
    assert verdict.reason == f"all {len(TASKS)} editing tasks passed"


def test_a_harness_whose_editor_lost_str_replace_fails_the_replace_task(tmp_path):
    harness = _copy(tmp_path)
    editor = harness / "tools" / "editor.py"
    editor.write_text(editor.read_text().replace('"str_replace": _str_replace, ', ""))

    with _agent(harness) as agent:
        verdict = editing_check(agent, log=lambda _: None)

    assert not verdict.passed
    failed = {t.name: t.reason for t in verdict.tasks if not t.passed}
    assert list(failed) == ["replace_line"]
    assert "settings.ini differs from the expected text" in failed["replace_line"]


def test_an_editor_that_reports_success_but_writes_nothing_fails_every_edit(tmp_path):
    harness = _copy(tmp_path)
    editor = harness / "tools" / "editor.py"
    text = editor.read_text().replace(
        "def _write(path: Path, text: str) -> None:\n",
        "def _write(path: Path, text: str) -> None:\n    return None\n",
    )
    editor.write_text(text)

    with _agent(harness) as agent:
        verdict = editing_check(agent, log=lambda _: None)

    assert not verdict.passed
    assert [t.passed for t in verdict.tasks] == [False, False, False]
