"""`simulator/sampling-worker`, best-of-N's demo Worker: the demo Worker's reading and editing,
with the keywords chosen by the sample the real best-of-N instruction names, so N samples of
one seed make N different edits, and the same sample makes the same edit again."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.best_of_n import markers
from flashrsi_dagster.algorithms.best_of_n.prompts import worker_instruction
from flashrsi_dagster.algorithms.meta_harness import markers as meta_harness_markers
from flashrsi_dagster.offline_model.policies.sampling import sample_index
from flashrsi_dagster.snapshots import Components
from tests.offline_model.policies.test_worker import HISTORY, PROMPT, _drive, _workspace

COMPONENTS = Components.parse({"prompt": ["prompts/*.md"]})


def _edit(client, root: Path, sample: int) -> str:
    workspace = _workspace(root, HISTORY)
    task = worker_instruction(
        COMPONENTS, ".history", "prompts/system.md", sample=sample, samples=3, split="train"
    )
    _drive(client, workspace, task, model="simulator/sampling-worker")
    return (root / "prompts/system.md").read_text().removeprefix(PROMPT)


def test_each_sample_of_the_instruction_makes_its_own_edit(client, tmp_path):
    edits = [_edit(client, tmp_path / f"s{i}", i) for i in range(3)]

    assert edits == [
        "- spam when the text mentions: lottery, bank, claim\n",
        "- spam when the text mentions: bank, claim, details\n",
        "- spam when the text mentions: claim, details, prize\n",
    ]
    assert _edit(client, tmp_path / "again", 1) == edits[1]  # deterministic


@pytest.mark.parametrize(
    ("text", "index"),
    [("Sample: 2 of 8", 2), ("x\n  Sample: `5 of 9`\n", 5), ("no marker", 0), ("Sample: n", 0)],
)
def test_the_sample_index_is_read_from_its_marker_line(text, index):
    assert sample_index(text) == index


def test_the_history_line_is_spelled_as_the_demo_worker_reads_it():
    assert markers.HISTORY == meta_harness_markers.HISTORY
