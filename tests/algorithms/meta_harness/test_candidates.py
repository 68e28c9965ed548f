"""Meta-Harness with several candidates per round (`candidates_per_round`): every candidate of
a round proposes from the rounds before it, so the candidates run side by side, in separate
processes, and the search comes out the same as one after another, in any order."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.base import Step, StepOrderError
from flashrsi_dagster.algorithms.meta_harness.plan import State, next_step, rank, ready_steps
from flashrsi_dagster.algorithms.meta_harness.records import RoundRecord
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.config import load_config
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.rollouts.record import RolloutRecord

EXAMPLE = Path(__file__).parents[3] / "examples" / "meta_harness.yaml"
SLOTS = ("c0", "c1")


def _round(k: int, slot: str = "c0", score: float | None = 0.5, status="evaluated"):
    return RoundRecord(
        round=k, slot=slot, status=status, snapshot_id=f"s{k}{slot}", dev_score=score
    )


def _state(*rounds: RoundRecord) -> State:
    return State(rounds=rounds, promotion=None, test=None)


def test_a_round_has_every_slot_ready_at_once_and_the_next_round_waits_for_all():
    seeded = _state(_round(0))
    assert ready_steps(seeded, 2, SLOTS) == (Step("propose", 1, "c0"), Step("propose", 1, "c1"))

    c1_done = _state(_round(0), _round(1, "c1"))
    assert next_step(c1_done, 2, SLOTS) == Step("propose", 1, "c0")
    assert ready_steps(c1_done, 2, SLOTS) == (Step("propose", 1, "c0"),)  # round 2 waits

    round_1 = _state(_round(0), _round(1, "c0", status="rejected"), _round(1, "c1"))
    assert ready_steps(round_1, 2, SLOTS) == (Step("propose", 2, "c0"), Step("propose", 2, "c1"))
    assert ready_steps(_state(), 2, SLOTS) == (Step("evaluate_seed", 0, "c0"),)  # one seed


def test_ties_keep_the_earlier_round_then_the_lower_slot():
    slots = [f"c{i}" for i in range(12)]
    rounds = [_round(0, score=0.25)]
    rounds += [_round(k, slot, score=0.75) for k in (2, 1) for slot in reversed(slots)]

    ranked = rank(rounds)

    assert [sid for _, sid, _ in ranked[:3]] == ["s1c0", "s1c1", "s1c2"]
    assert [sid for _, sid, _ in ranked[10:13]] == ["s1c10", "s1c11", "s2c0"]  # c10 after c9


def _overrides(home: Path) -> list[str]:
    return [
        *("--experiment.home", str(home)),
        *("--benchmark.limit", "4", "--algorithm.max_steps", "1"),
        *("--algorithm.candidates_per_round", "2"),
    ]


def _opened(home: Path) -> MetaHarness:
    config = load_config(EXAMPLE, _overrides(home))
    return MetaHarness(open_experiment(config), log=lambda _: None)


# Each process opens the experiment afresh, waits at a gate until every candidate's process
# has opened it, does its one step, and prints when that step started and ended.
CANDIDATE = """
import json, sys, time
from pathlib import Path
from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment

example, overrides, slot, gate, count = sys.argv[1:]
config = load_config(Path(example), json.loads(overrides))
harness = MetaHarness(open_experiment(config), log=lambda _: None)
(Path(gate) / slot).touch()
while len(list(Path(gate).iterdir())) < int(count):
    time.sleep(0.01)
started = time.time()
harness.do(Step("propose", 1, slot))
harness.close()
print(json.dumps([started, time.time()]))
"""


def _side_by_side(home: Path, gate: Path) -> list[list[float]]:
    """Round 1's candidates, each in a process of its own, all at once: their (start, end)."""
    gate.mkdir()
    args = [str(EXAMPLE), json.dumps(_overrides(home))]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", CANDIDATE, *args, slot, str(gate), str(len(SLOTS))],
            stdout=subprocess.PIPE,
            text=True,
        )
        for slot in SLOTS
    ]
    outputs = [p.communicate(timeout=600)[0] for p in processes]
    assert [p.returncode for p in processes] == [0, 0]
    return [json.loads(out.splitlines()[-1]) for out in outputs]


def _c1_through_dagster(harness: MetaHarness) -> None:
    import dagster as dg

    from flashrsi_dagster.deployment.in_process import InProcessRuns
    from flashrsi_dagster.orchestration.algorithm_defs import defs_for

    config = harness.experiment.config
    name, scores = config.experiment.name, dg.AssetKey(["meta_harness", "scores"])
    with dg.instance_for_test() as instance:
        defs_for("meta_harness").register(instance, name, harness)
        runs = InProcessRuns(instance, str(config.experiment.home))
        with pytest.raises(dg.DagsterUnknownPartitionError):  # the seed's round has c0 only
            runs.execute("meta_harness", name, Step("propose", 0, "c1"))
        assert runs.execute("meta_harness", name, Step("propose", 1, "c1"))
        assert instance.get_materialized_partitions(scores) == {f"r001.c1|{name}"}
        shown = instance.get_latest_materialization_event(scores).asset_materialization.metadata
    made = harness.read_state().round(1, "c1")
    assert made is not None and shown["snapshot_id"].value == made.snapshot_id


def _outcome(harness: MetaHarness) -> dict:
    """What the search decided, free of what differs between two runs of it (snapshot ids
    carry a commit time, ledger ids the promotion's): per candidate its status, score,
    snapshot tree and per-task scores; the promotion and the ranking by candidate; the
    ledger's decisions by candidate."""
    state, store = harness.read_state(), harness.experiment.snapshots
    name = {r.snapshot_id: (r.round, r.slot) for r in state.rounds}
    candidates = {
        (r.round, r.slot): (
            r.status,
            r.dev_score,
            store.get(r.snapshot_id).tree if r.snapshot_id else None,
            sorted(
                (t.task_id, t.score)
                for t in RolloutRecord(harness.layout.rollouts(r.round, r.slot), None).load()  # type: ignore[arg-type]
            ),
        )
        for r in state.rounds
    }
    promotion = state.promotion
    assert promotion is not None
    ledger = [
        (re.sub(r"@[^/]+", "@", d.id), d.decision, d.candidate.round, d.candidate.slot)
        for d in Ledger.of(harness.experiment).entries()
    ]
    return {
        "candidates": candidates,
        "promoted": (promotion.round, promotion.slot, promotion.dev_score),
        "ranking": [(name[sid], score) for _, sid, score in promotion.ranking],
        "ledger": sorted(ledger),
    }


@pytest.mark.slow
def test_candidates_of_a_round_in_separate_processes_match_one_after_another(tmp_path):
    parallel, sequential = _opened(tmp_path / "parallel"), _opened(tmp_path / "sequential")
    for harness in (parallel, sequential):
        harness.do(harness.next())  # round 0, the seed
        assert harness.ready_steps(harness.read_state()) == tuple(
            Step("propose", 1, slot) for slot in SLOTS
        )
    with pytest.raises(StepOrderError, match=r"edit of round 1 c2 refused: a round's slots"):
        parallel.edit(1, "c2")
    with pytest.raises(
        StepOrderError, match=r"evaluation of round 0 c1 refused: round 0's slots are c0 "
    ):
        parallel.evaluate_round(0, "c1")

    spans = _side_by_side(tmp_path / "parallel", tmp_path / "gate")
    # The other order, one after another: c1 as its round job's run on a Dagster instance
    # (its partition r001.c1), then c0 in this process.
    _c1_through_dagster(sequential)
    sequential.do(Step("propose", 1, "c0"))

    assert max(start for start, _ in spans) < min(end for _, end in spans)  # side by side
    parallel.experiment.records.verify()  # every record written is on the integrity chain
    for harness in (parallel, sequential):
        assert harness.next().action == "promote"
        harness.run(until="sealed_test")
    ledger = Ledger.of(parallel.experiment).entries()
    assert len({d.id for d in ledger}) == len(ledger)  # each decision once
    found = _outcome(parallel)
    assert found == _outcome(sequential)
    assert set(found["candidates"]) == {(0, "c0"), (1, "c0"), (1, "c1")}
    assert "round 1 c1: evaluated" in "\n".join(parallel.summary(parallel.read_state()))
    assert all(c[0] == "evaluated" for c in found["candidates"].values())
    assert found["promoted"][:2] == (1, "c0")  # c0 and c1 made the same edit: the lower slot
    # c0 ran after c1 here, yet its Worker's history held round 0 alone
    listing = _tool_output(sequential.layout.worker(1, "c0"))
    assert ".history/trajectories/round-000/round.json" in listing
    assert "round-001" not in listing
    layout = parallel.layout
    assert layout.worker(1, "c1").name == "round-001-c1-worker.json"
    assert layout.edit(1, "c0").name == "round-001-edit.json"  # c0 keeps the names of old


def _tool_output(worker: Path) -> str:
    return "\n".join(
        m["content"] for m in json.loads(worker.read_text())["messages"] if m["role"] == "tool"
    )


def test_a_worker_failure_aborts_the_round_and_its_other_candidates_are_refused(tmp_path):
    from flashrsi_dagster.llm.endpoints import offline_server

    offline_server().add_script("mh-candidates-fail", [{"error": 500}] * 4)
    model = ["--algorithm.worker.llm.model", "simulator/script:mh-candidates-fail"]
    config = load_config(
        EXAMPLE, [*_overrides(tmp_path), *model, "--algorithm.worker.llm.max_retries", "0"]
    )
    harness = MetaHarness(open_experiment(config), log=lambda _: None)

    state = harness.run()

    assert [(r.round, r.slot, r.status) for r in state.rounds] == [
        (0, "c0", "evaluated"),
        (1, "c0", "worker_failed"),
    ]
    assert harness.ready_steps(state) == (Step("aborted"),)
    with pytest.raises(StepOrderError, match=r"round 1 c1 refused: the search was aborted"):
        harness.do(Step("propose", 1, "c1"))
    assert not harness.layout.edit(1, "c1").exists()
    assert not any(harness.view(slot).root.exists() for slot in SLOTS)
