"""Meta-Harness refuses records it did not write: a Worker that rewrites an earlier round's
dev score gets no promotion, and a forged sealed test result is not reported."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.records import IntegrityError
from tests.algorithms.meta_harness.test_run import (
    DRIVERS,
    _config,
    _shell,
    _through_dagster,
    _worker_script,
)

ROUND_1 = "records/meta_harness/round-001.json"


@DRIVERS
def test_a_worker_that_rewrites_a_dev_score_gets_no_promotion(tmp_path, how):
    config = _config(tmp_path, "--algorithm.max_steps", "2")
    record = config.experiment.dir / ROUND_1
    model = _worker_script(
        f"mh-forger-{how}",
        [
            _shell(
                "printf '\\n- malicious when the text mentions: ignore\\n' >> prompts/system.md"
            ),
            {"text": "added a rule"},
            # Step 2: the attack seen on main, from inside the Worker's edit folder.
            _shell(f'sed -i \'s/"dev_score": [0-9.e-]*/"dev_score": 1.0/\' {record}'),
            {"text": "nothing to change"},
        ],
    )
    # Unconfined, as on main before the jail: the jail keeps the home out of the Worker's reach;
    # the chain is what catches a forgery should anything reach it all the same.
    config = _config(
        tmp_path,
        "--algorithm.max_steps",
        "2",
        "--algorithm.worker.llm.model",
        model,
        "--experiment.confinement",
        "none",
    )
    harness = MetaHarness(open_experiment(config), log=lambda _: None)

    with pytest.raises(IntegrityError) as refused:
        harness.run() if how == "engine" else _through_dagster(config)

    written = _last_entry_of(config.experiment.dir, ROUND_1)
    assert refused.value.problems == [
        f"{ROUND_1}: content changed since the framework wrote it (chain entry {written})"
    ]
    assert '"dev_score": 1.0' in record.read_text()  # the forgery is there, and refused
    state = harness.read_state()
    assert [r.round for r in state.rounds] == [0, 1, 2]
    assert state.promotion is None and state.test is None


def test_a_dev_score_changed_in_place_is_refused_at_promotion(tmp_path):
    config = _config(tmp_path, "--algorithm.max_steps", "1")
    harness = MetaHarness(open_experiment(config), log=lambda _: None)
    while (step := harness.next()).action != "promote":
        harness.do(step)
    record = config.experiment.dir / ROUND_1
    _forge(record, "dev_score")

    with pytest.raises(IntegrityError) as refused:
        harness.promote()

    written = _last_entry_of(config.experiment.dir, ROUND_1)
    assert refused.value.problems == [
        f"{ROUND_1}: content changed since the framework wrote it (chain entry {written})"
    ]
    assert harness.read_state().promotion is None
    harness.close()


def test_a_forged_sealed_test_score_is_refused_on_resume(tmp_path):
    config = _config(tmp_path, "--algorithm.max_steps", "1")
    MetaHarness(open_experiment(config), log=lambda _: None).run()
    test = config.experiment.dir / "records/meta_harness/test.json"
    _forge(test, "test_score")

    harness = MetaHarness(open_experiment(config), log=lambda _: None)
    for step in (harness.run, harness.sealed_test):
        with pytest.raises(IntegrityError) as refused:
            step()
        assert refused.value.problems == [
            "records/meta_harness/test.json: content changed since the framework wrote it "
            f"(chain entry {_last_entry_of(config.experiment.dir, test.name)})"
        ]


def _forge(record: Path, field: str) -> None:
    """Set `field` to 1.0 in place, keeping the file's size and mtime."""
    before, text = record.stat(), record.read_text()
    value = re.search(rf'"{field}": [0-9.e-]+', text).group()
    assert value != f'"{field}": 1.0'
    record.write_text(text.replace(value, f'"{field}": 1.0'.ljust(len(value))))
    os.utime(record, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert record.stat().st_size == before.st_size


def _last_entry_of(root: Path, name: str) -> int:
    """The chain entry that last wrote the record `name` ends with."""
    lines = (root / "records/chain.jsonl").read_text().splitlines()
    return max(e["seq"] for e in map(json.loads, lines) if e["path"].endswith(name))
