from __future__ import annotations

from pathlib import Path

import pytest

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
