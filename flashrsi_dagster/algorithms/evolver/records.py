"""The Evolver's records: the journal its state is replayed from.

records/evolver/
  cold_start.json                 ColdStart: vanilla's K runs on train, the frozen baseline
  cold_start.jsonl                its rollouts
  failure_map-000.json            the failure map after the cold start's diagnosis
  round-003/plan.json             RoundPlan: the parent, the WHYs chosen (and the shadow log)
  round-003/w1c2/design.json      the Worker's design run of WHY 1's candidate 2
  round-003/w1c2/applied.json     Applied: the git child it made (or why none)
  round-003/w1c2/content.json     ContentVerdict: its contamination check, before any run
  round-003/w1c2/screen.jsonl     its K=1 rollouts on the anchor set
  round-003/w1c2/confirm.jsonl    its K runs on the whole train set (survivors only)
  nodes/r003.w1c2.json            Node: identity, git sha, final state, gate statistics
  round-003/decision.json         RoundDecision: the outcome and the parent after the round
  failure_map-003.json            the map after round 3's re-diagnosis
  findings.md, history.json       the human log (a section per round), attempts by WHY
  retention.json, test-*.jsonl    the unsealed test of the baseline and each delivered version

Every write goes through the integrity chain; a crashed step leaves its record unwritten, so a
resume replays the finished steps and does the interrupted one again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from flashrsi_dagster.algorithms.evolver.termination import RoundOutcome
from flashrsi_dagster.decisions.adoption import Refusal
from flashrsi_dagster.records import Record


class ColdStart(Record):
    kind: Literal["evolver_cold_start"] = "evolver_cold_start"
    vanilla_id: str
    k: int
    rates: dict[str, float] = Field(description="Vanilla's per-task rate over K runs (the ledger).")
    mean: float = Field(description="Vanilla's score over train x K: the fixed baseline.")
    taxonomy: str = Field(description="`builtin` or `induced`, and the benchmark.")
    eval_set: str = Field(description="The train set's version the runs were on (`train/e1`).")
    failing: int = Field(description="Train tasks vanilla did not pass on every run.")


class RoundPlan(Record):
    kind: Literal["evolver_round_plan"] = "evolver_round_plan"
    round: int
    parent_id: str
    whys: list[str]
    source: Literal["model", "formula"]
    shadow: list[tuple[str, float]] = Field(description="The formula's ranking, always logged.")
    note: str = ""
    slots: list[str] = Field(description="The candidate slots this round runs (W x C).")
    anchor: dict[str, list[str]] = Field(
        description="Per WHY (per `x<n>` for a recombination): its anchor tasks, from train."
    )
    recombine: dict[str, list[str]] = Field(
        default_factory=dict, description="Per recombination slot: the two elite nodes merged."
    )
    error: str | None = Field(
        None, description="Why the round could not be planned (it is then `errored`)."
    )


class Applied(Record):
    """A candidate's change, once made: read back on a resume, so a crash after the commit
    never designs (and commits) the candidate a second time."""

    kind: Literal["evolver_applied"] = "evolver_applied"
    status: Literal["committed", "noop", "refused", "failed"]
    snapshot_id: str | None = None
    changed: list[str] = Field(default_factory=list, description="`<status> <path>` per file.")
    reason: str | None = None
    declared_where: str | None = None
    trigger: str | None = None
    produced_by: str | None = Field(
        None,
        description="The snapshot whose harness designed the change (`worker.harness: "
        "adopted`: the round's parent); None: the Worker role's own harness.",
    )


class RoundDecision(Record):
    kind: Literal["evolver_round_decision"] = "evolver_round_decision"
    round: int
    outcome: RoundOutcome
    parent_before: str
    parent_after: str
    promoted: str | None = Field(None, description="The node promoted to baseline, if any.")
    reason: str
    refused: list[Refusal] = Field(
        default_factory=list,
        description="Library nodes ranked above the promoted one (or the kept parent) whose "
        "adoption the host refused (`decisions.adoption`: they violate the declared trade-off "
        "rule against vanilla).",
    )


class RetentionReport(Record):
    kind: Literal["evolver_retention"] = "evolver_retention"
    rows: list[dict] = Field(
        description="Per delivered version (vanilla first): label, snapshot_id, train, test, "
        "train_lift, test_lift, retained (`sealed.retention`)."
    )
    eval_set: str = Field(description="The test set's version the versions were scored on.")
    k: int = Field(description="Runs per test task.")


class Layout:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def of(cls, records: Path) -> Layout:
        return cls(records / "evolver")

    @property
    def cold_start(self) -> Path:
        return self.folder / "cold_start.json"

    @property
    def cold_start_rollouts(self) -> Path:
        return self.folder / "cold_start.jsonl"

    def failure_map(self, r: int) -> Path:
        return self.folder / f"failure_map-{r:03d}.json"

    def round(self, r: int) -> Path:
        return self.folder / f"round-{r:03d}"

    def plan(self, r: int) -> Path:
        return self.round(r) / "plan.json"

    def decision(self, r: int) -> Path:
        return self.round(r) / "decision.json"

    @property
    def taxonomy(self) -> Path:
        return self.folder / "taxonomy.json"

    @property
    def findings(self) -> Path:
        return self.folder / "findings.md"

    @property
    def history(self) -> Path:
        return self.folder / "history.json"

    @property
    def archive(self) -> Path:
        return self.folder / "archive.json"

    def model_call(self, r: int, name: str) -> Path:
        """A model call's trajectory: `diagnose`, `pick`, `induce-1`, …"""
        return self.round(r) / f"{name}.json"

    def candidate(self, r: int, slot: str, part: str) -> Path:
        """`design.json`, `screen.jsonl`, `confirm.jsonl` of one candidate."""
        return self.round(r) / slot / part

    def node(self, node_id: str) -> Path:
        return self.folder / "nodes" / f"{node_id}.json"

    @property
    def retention(self) -> Path:
        return self.folder / "retention.json"

    def test_rollouts(self, label: str) -> Path:
        """A delivered version's test rollouts (`vanilla`, `round 3` -> `test-round-3.jsonl`)."""
        return self.folder / f"test-{label.replace(' ', '-')}.jsonl"


def node_id(r: int, slot: str) -> str:
    return f"r{r:03d}.{slot}"
