"""Shared fixtures: real harness folders on disk, a real snapshot store, a planted canary."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from flashrsi_dagster.environments.jail import JailError, require_jails
from flashrsi_dagster.snapshots import SnapshotStore


def _why_no_jails() -> str | None:
    try:
        require_jails()
    except JailError as exc:
        return f"jails cannot run here: {exc}"
    return None


_NO_JAILS = _why_no_jails()
needs_jails = pytest.mark.skipif(_NO_JAILS is not None, reason=_NO_JAILS or "")
"""For tests of the jail itself (bubblewrap and root; `make test` and CI have both)."""

CANARY_ENV = "FLASHRSI_TEST_CANARY_API_KEY"
CANARY = "canary-7f3b9e21c4d5a6b8-do-not-leak"

VALID = """\
experiment:
  name: exp-1
  seed: 7
agent:
  type: miniagent
  source_dir: harness
  llm:
    model: simulator/target
    base_url: offline
    api_key: ${FLASHRSI_TEST_CANARY_API_KEY}
algorithm:
  name: meta_harness
  max_steps: 4
  worker:
    llm:
      model: simulator/worker
      base_url: offline
benchmark:
  name: text_classification
  split_counts: {train: 10, dev: 5, test: 20}
"""

HARNESS_COMPONENTS = {"code": ["runtime/**"], "prompt": ["prompts/**"], "skill": ["skills/**"]}


def write_harness(
    root: Path, files: dict[str, str | bytes], components: dict | None = None
) -> Path:
    """A harness folder: `components.yaml` plus `files` (str = text, bytes = binary)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "components.yaml").write_text(yaml.safe_dump(components or HARNESS_COMPONENTS))
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


@pytest.fixture
def make_harness(tmp_path: Path) -> Callable[..., Path]:
    def make(files: dict[str, str | bytes] | None = None, name: str = "harness", **kw) -> Path:
        default = {
            "prompts/system.md": "You are a careful classifier.\n",
            "runtime/agent.py": "print('hello')\n",
            "runtime/run.sh": "#!/bin/sh\necho run\n",
            "skills/labels/SKILL.md": "---\ndescription: labels\n---\nUse the labels.\n",
            "README.md": "not declared, never captured\n",
        }
        root = write_harness(tmp_path / name, default if files is None else files, **kw)
        if files is None:
            os.chmod(root / "runtime/run.sh", 0o755)
        return root

    return make


@pytest.fixture
def store(tmp_path: Path) -> SnapshotStore:
    return SnapshotStore(tmp_path / "store")


@pytest.fixture
def canary(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(CANARY_ENV, CANARY)
    return CANARY


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding a valid config and its harness; the working directory elsewhere."""
    folder = tmp_path / "configs"
    (folder / "harness").mkdir(parents=True)
    (folder / "exp.yaml").write_text(VALID)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return folder
