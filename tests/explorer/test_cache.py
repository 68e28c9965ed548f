"""The explorer keeps an experiment's tree between requests and reads it again only when a
file it is read from changes: a live experiment's next ledger line shows at the next request."""

from __future__ import annotations

import shutil

from flashrsi_dagster.decisions.ledger import LEDGER, Decision, Ref
from flashrsi_dagster.explorer.cache import Experiments

NAME = "meta-harness-demo"


def _copy(demo_home, tmp_path):
    home = tmp_path / "home"
    shutil.copytree(demo_home / NAME, home / NAME)
    return home


def test_an_unchanged_experiment_is_served_from_memory(demo_home, tmp_path):
    experiments = Experiments(_copy(demo_home, tmp_path))
    first = experiments.open(NAME)

    assert experiments.open(NAME) is first
    assert first.store is not None and first.nodes.keys() == {n.id for n in first.tree.nodes}


def test_a_new_ledger_line_is_read_at_the_next_request(demo_home, tmp_path):
    home = _copy(demo_home, tmp_path)
    experiments = Experiments(home)
    before = experiments.open(NAME)
    ledger = home / NAME / LEDGER
    last = Decision.model_validate_json(ledger.read_text().splitlines()[-1])
    empty = Ref(snapshot_id=None, round=3, slot="c0")
    line = last.model_copy(update={"id": "r003.c0/new", "candidate": empty, "reason": "no edit"})
    with ledger.open("a", encoding="utf-8") as out:
        out.write(line.model_dump_json() + "\n")

    after = experiments.open(NAME)
    assert after is not before
    assert after.nodes["r3.c0"].reason == "no edit"
    assert len(after.tree.nodes) == len(before.tree.nodes) + 1
    assert after.store is before.store  # the snapshots read stay read: they never change


def test_a_sealed_test_written_later_shows_at_the_next_request(demo_home, tmp_path):
    home = _copy(demo_home, tmp_path)
    test = home / NAME / "records" / "meta_harness" / "test.json"
    held = test.read_bytes()
    test.unlink()
    experiments = Experiments(home)
    assert experiments.open(NAME).tree.sealed_test is None

    test.write_bytes(held)
    assert experiments.open(NAME).tree.sealed_test is not None
