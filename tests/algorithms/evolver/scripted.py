"""What the Evolver tests share: the demo's shape on a small train split, and a Worker whose
design runs can be scripted while the simulator's `simulator/evolver` diagnoses and picks
(both real MiniAgent runs through the offline simulator)."""

from __future__ import annotations

from pathlib import Path

import yaml

from flashrsi_dagster.agents import Agent, worker_agent
from flashrsi_dagster.algorithms.builders import Builders
from flashrsi_dagster.algorithms.evolver.markers import EVOLVER_PHASE
from flashrsi_dagster.algorithms.evolver.records import RetentionReport
from flashrsi_dagster.algorithms.evolver.run import Evolver
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.records import read_optional


def write_config(
    tmp_path: Path, *, worker_model: str = "simulator/evolver", benchmark=None, **algorithm
) -> Path:
    """`<tmp_path>/evolver.yaml`: 12 train and 6 test tasks, K=3, one WHY x two candidates,
    patience 2 within 5 rounds."""
    config = {
        "experiment": {"name": "evolver", "home": str(tmp_path / "home"), "seed": 0},
        "agent": {
            "type": "miniagent",
            "llm": {"model": "simulator/target", "base_url": "offline", "timeout": 30},
            "timeout": 60,
            "max_turns": 4,
        },
        "algorithm": {
            "name": "evolver",
            "k": 3,
            "max_why_per_round": 1,
            "candidates_per_why": 2,
            "recombinations_per_round": 0,
            "patience": 2,
            "max_rounds": 5,
            "anchor_size": 6,
            "worker": {
                "type": "miniagent",
                "llm": {"model": worker_model, "base_url": "offline", "timeout": 30},
                "timeout": 120,
                "max_turns": 12,
            },
            **algorithm,
        },
        "benchmark": {
            "name": "text_classification",
            "seed": 0,
            "split_counts": {"train": 12, "dev": 0, "test": 6},
            "concurrency": 4,
            **(benchmark or {}),
        },
    }
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "evolver.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


class Routed:
    """The Worker: the design runs go to `designer`, every other call to `judge`."""

    def __init__(self, judge: Agent, designer: Agent) -> None:
        self.judge, self.designer = judge, designer

    def __getattr__(self, name: str):
        return getattr(self.judge, name)

    def run(self, working_dir, instruction: str, **kwargs):
        designing = instruction.startswith(f"{EVOLVER_PHASE} design")
        return (self.designer if designing else self.judge).run(working_dir, instruction, **kwargs)

    def edit(self, checkout, prompt: str, **kwargs):
        return self.run(checkout, prompt, **kwargs)

    def close(self) -> None:
        self.judge.close()
        self.designer.close()


def routed(*, design: str | None = None, judge: str | None = None) -> Builders:
    """Builders whose Worker sends its design runs to model `design` and its other calls
    (diagnosis, pick, induction) to model `judge` (e.g. `simulator/script:` ids); a role
    left None keeps the config's model."""

    def worker(config, files_dir, *, confinement):
        def built(model: str | None) -> Agent:
            llm = config.llm if model is None else config.llm.model_copy(update={"model": model})
            role = config.model_copy(update={"llm": llm})
            return worker_agent(role, files_dir, confinement=confinement)

        return Routed(built(judge), built(design))

    return Builders(worker=worker)


def designed_by(model: str) -> Builders:
    """Builders whose Worker designs with `model` (e.g. a `simulator/script:` id)."""
    return routed(design=model)


def fingerprint(evolver: Evolver) -> dict:
    """What a run decided, free of clocks: node fates, trees, scores, maps, the ledger."""
    state = evolver.read_state()
    store = evolver.experiment.snapshots
    nodes = [
        (
            n.id,
            n.state,
            n.where,
            n.confirm_mean,
            (n.screen or {}).get("bucket"),
            store.get(n.snapshot_id).tree if n.snapshot_id else None,
            [(g["name"], g["passed"]) for g in n.gates],
        )
        for n in evolver.nodes(state)
    ]
    maps = {
        p.name: sorted(
            (t, d.why) for t, d in evolver.failure_map(int(p.stem[-3:]) + 1).failing.items()
        )
        for p in sorted(evolver.layout.folder.glob("failure_map-*.json"))
    }
    ledger = [(d.id, d.decision, d.scope) for d in Ledger.of(evolver.experiment).entries()]
    report = read_optional(evolver.layout.retention, RetentionReport)
    rows = (
        [{**row, "snapshot_id": store.get(row["snapshot_id"]).tree} for row in report.rows]
        if report
        else None
    )
    return {
        "cold": (state.cold_start.mean, state.cold_start.rates),
        "nodes": nodes,
        "decisions": [(d.round, d.outcome, d.promoted) for d in (r.decision for r in state.rounds)],
        "maps": maps,
        "ledger": ledger,
        "retention": rows,
    }
