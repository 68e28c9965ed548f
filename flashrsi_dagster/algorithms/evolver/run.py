"""The Evolver SOP (seed 004) on the algorithm seam.

A cold start runs vanilla (the seed harness) on the whole train split K times: the stability
ledger and the frozen baseline, and the failure map over a WHY taxonomy. Then each round runs
the seven-step funnel as separate steps (`plan.py`): `diagnose` (Gate0, re-diagnosis of the
last round's children, the WHY pick, the anchors), one step per candidate slot (design, the
beacon guard, apply as a git child, screen, confirm, the gates: `candidate.py`) and `decide`
(the library's best becomes the parent: `endings.py`). Rounds stop on patience against the
fixed vanilla, the round cap or errored rounds in a row; then the test split is unsealed once
for the retention report. Everything the search reads is train; dev takes no part.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import ClassVar

from flashrsi_dagster.algorithms.base import Step, StepOrderError
from flashrsi_dagster.algorithms.evolver import endings, ledger_entries, report
from flashrsi_dagster.algorithms.evolver.candidate import CandidateStep
from flashrsi_dagster.algorithms.evolver.choose import Budget
from flashrsi_dagster.algorithms.evolver.cold_start import ColdStartStep
from flashrsi_dagster.algorithms.evolver.config import EvolverConfig
from flashrsi_dagster.algorithms.evolver.confirm_gates import Confirmed, confirmed
from flashrsi_dagster.algorithms.evolver.diagnosis_step import DiagnoseStep
from flashrsi_dagster.algorithms.evolver.failure_map import FailureMap
from flashrsi_dagster.algorithms.evolver.health import gate0
from flashrsi_dagster.algorithms.evolver.nodes import Node
from flashrsi_dagster.algorithms.evolver.plan import (
    Shape,
    State,
    next_step,
    read_state,
    ready_steps,
)
from flashrsi_dagster.algorithms.evolver.records import (
    ColdStart,
    Layout,
    RetentionReport,
    RoundDecision,
    RoundPlan,
    node_id,
)
from flashrsi_dagster.algorithms.evolver.sealed import assert_no_test_leak
from flashrsi_dagster.algorithms.evolver.taxonomy import Taxonomy
from flashrsi_dagster.algorithms.evolver.termination import Termination
from flashrsi_dagster.algorithms.searching import Searching
from flashrsi_dagster.algorithms.turns import one_step_at_a_time, side_by_side
from flashrsi_dagster.answers import ask_until_read, attempt_name
from flashrsi_dagster.benchmarks.loading import load_splits
from flashrsi_dagster.decisions import Decision, Ledger, baseline
from flashrsi_dagster.decisions.adoption import Refusal, refusal
from flashrsi_dagster.records import Trajectory, read_optional
from flashrsi_dagster.rollouts.engine import (
    final_trajectories,
)
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.scratch import scratch_dir
from flashrsi_dagster.snapshots import Snapshot


class Evolver(Searching):
    name: ClassVar[str] = "evolver"
    SEARCH_SPLITS = ("train",)

    config: EvolverConfig
    _vanilla_runs: list[Trajectory] | None = None

    @cached_property
    def shape(self) -> Shape:
        c = self.config
        return Shape(
            Budget(c.max_why_per_round, c.candidates_per_why),
            Termination(c.patience, c.max_rounds, c.max_consecutive_errors),
            c.recombinations_per_round,
        )

    @cached_property
    def layout(self) -> Layout:
        return Layout.of(self.experiment.paths.records)

    # -- the seam -------------------------------------------------------------------------

    def slots(self) -> tuple[str, ...]:
        return self.shape.slots()

    def rounds(self) -> int:
        return self.shape.rounds

    def round_slots(self) -> tuple[tuple[int, str], ...]:
        shape = self.shape  # round 0 the cold start alone; no vanilla after it
        slots = shape.slots()
        return tuple((r, s) for r in range(shape.rounds) for s in slots if shape.step_at(r, s))

    def read_state(self) -> State:
        """The records' state, and what a roll-back changed for the rounds to come: the
        parent it restored, the snapshots it set aside (`decisions.baseline`)."""
        ledger = Ledger.of(self.experiment)
        return replace(
            read_state(self.layout, self.shape),
            restored=baseline.restored(ledger),
            set_aside=baseline.set_aside(ledger),
        )

    def next_step(self, state: State) -> Step:
        return next_step(state, self.shape)

    def ready_steps(self, state: State) -> tuple[Step, ...]:
        return ready_steps(state, self.shape)

    def step_line(self, state: State, step: Step) -> str:
        return report.step_line(self, state, step)

    def summary(self, state: State) -> list[str]:
        return report.summary(self, state)

    def decisions(self, state: State) -> list[Decision]:
        return ledger_entries.decisions(self, state)

    def do(self, step: Step) -> None:
        r = step.round
        if step.action == "cold_start":
            self.cold_start()
        elif step.action == "diagnose" and r is not None:
            self.diagnose(r)
        elif step.action == "candidate" and r is not None and step.slot is not None:
            self.candidate(r, step.slot)
        elif step.action == "decide" and r is not None:
            self.decide(r)
        elif step.action == "sealed_test":
            self.sealed_test()
        else:
            raise StepOrderError(f"nothing to do for {step.describe()}")

    # -- steps ----------------------------------------------------------------------------

    def _require(self, step: Step) -> State:
        """The state, if `step` is the search's turn; else StepOrderError, nothing changed."""
        state = self.read_state()
        if state.retention:
            raise StepOrderError(f"{step.describe()} refused: the test has been unsealed")
        ready = self.ready_steps(state)
        if step not in ready:
            raise StepOrderError(f"{step.describe()} refused: {ready[0].describe()} comes first")
        return state

    @one_step_at_a_time
    def cold_start(self) -> ColdStart:
        done = read_optional(self.layout.cold_start, ColdStart)
        if done is not None:
            return done
        self._require(Step("cold_start", 0, "vanilla"))
        self.check_sealed()
        gate0(self.experiment.config, "the cold start")
        record = ColdStartStep(self).run()
        self.log(
            f"cold start: vanilla {record.vanilla_id[:12]} K={record.k} mean {record.mean:.4f}"
            f" on {record.eval_set}; {record.failing} failing train task(s)"
        )
        return record

    @one_step_at_a_time
    def diagnose(self, r: int) -> RoundPlan:
        done = read_optional(self.layout.plan(r), RoundPlan)
        if done is not None:
            return done
        state = self._require(Step("diagnose", r, "diagnose"))
        gate0(self.experiment.config, f"round {r}")
        plan = DiagnoseStep(self, state, r).run()
        self.log(report.plan_line(plan))
        return plan

    @side_by_side(lambda self, r, slot: node_id(r, slot))
    def candidate(self, r: int, slot: str) -> Node:
        """One candidate of round `r`, beside its siblings: it writes only under its own
        slot (its folder, its node) and its own snapshot; the ledger gets its entry from
        `decide`, in slot order, as if the candidates had run one after another."""
        done = read_optional(self.layout.node(node_id(r, slot)), Node)
        if done is not None:
            return done
        state = self._require(Step("candidate", r, slot))
        node = self.write(
            self.layout.node(node_id(r, slot)), CandidateStep(self, state, r, slot).run()
        )
        self.log(f"{node.id} ({node.why}, {node.where or '-'}): {node.state} — {node.reason}")
        return node

    @one_step_at_a_time
    def decide(self, r: int) -> RoundDecision:
        done = read_optional(self.layout.decision(r), RoundDecision)
        if done is not None:
            self.record_decisions()
            return done
        state = self._require(Step("decide", r, "decide"))
        decision = endings.decide_round(self, state, r)
        self.record_decisions()
        self.log(f"round {r}: {decision.outcome}; {decision.reason}")
        return decision

    @one_step_at_a_time
    def sealed_test(self) -> RetentionReport:
        done = read_optional(self.layout.retention, RetentionReport)
        if done is not None:
            return done
        state = self.read_state()
        due = self.next_step(state)
        if due.action != "sealed_test":
            raise StepOrderError(f"the sealed test refused: {due.describe()} comes first")
        self.experiment.records.verify()
        record = endings.unseal_retention(self, state)
        self.record_decisions()
        for row in record.rows:
            self.log(report.retention_line(row))
        return record

    @one_step_at_a_time
    def archive_node(self, node_id: str, reason: str) -> Node:
        """Set a node aside as `archived-methodology-failure` (an operator's or an audit's
        verdict: its evidence is not to be trusted). It leaves the library, so it is never a
        parent, an elite or a recombination's half again; its records and ledger entries
        stay, and the ledger gains the archival. The current parent is refused: roll back
        first (`flashrsi rollback`), then archive."""
        state = self.read_state()
        node = next((n for n in self.nodes(state) if n.id == node_id), None)
        if node is None:
            known = ", ".join(n.id for n in self.nodes(state)) or "none yet"
            raise ValueError(f"no node {node_id!r} in this experiment (nodes: {known})")
        if node.state == "archived-methodology-failure":
            return node
        if (rd := state.round(node.round)) is None or rd.decision is None:
            raise StepOrderError(
                f"{node_id}'s round {node.round} is not decided yet: archive it after `decide` "
                "(which enters the round's candidates in the ledger)"
            )
        if node.snapshot_id is not None and node.snapshot_id == state.parent():
            raise StepOrderError(
                f"{node_id} is the current parent: the search would go on from it; roll the "
                "baseline back first"
            )
        archived = node.model_copy(
            update={
                "state": "archived-methodology-failure",
                "library": False,
                "reason": f"archived: {reason} (was {node.state}: {node.reason})",
            }
        )
        archived = self.write(self.layout.node(node_id), archived)
        self.record_decisions()
        self.log(f"{node_id}: archived-methodology-failure — {reason}")
        return archived

    # -- what the steps share -------------------------------------------------------------

    @property
    def train_ids(self) -> list[str]:
        return [t.id for t in self.splits.train]

    def check_sealed(self) -> None:
        """`assert_no_test_leak`: the ids the search holds, each asked of the test split
        (as digests: no test id comes out)."""
        drawn = load_splits(self.experiment.config.benchmark, self.benchmark)
        dev = [t.id for t in self.splits.dev]
        assert_no_test_leak(drawn.test_ids, train=self.train_ids, dev=dev)

    def ask(self, instruction: str, r: int, name: str) -> Trajectory:
        """A model call of the Worker (diagnosis, pick, induction) in an empty folder; its
        trajectory is kept as `round-<r>/<name>.json`."""
        return self.write(self.layout.model_call(r, name), self._call(instruction, r, name))

    def ask_until_read[T](
        self, instruction: str, r: int, name: str, read: Callable[[Trajectory], T]
    ) -> T:
        """A model call whose answer `read` parses, asked again with the parse error while
        `answer_retries` last (`answers.ask_until_read`, seed 004's SemanticNode); the
        deciding call is kept as `round-<r>/<name>.json`, each retried one as
        `<name>-malformed-<n>.json`. Retries spent: the last `ProtocolError`."""

        def keep(run: Trajectory, retried: int | None) -> None:
            self.write(self.layout.model_call(r, attempt_name(name, retried)), run)

        def call(prompt: str) -> Trajectory:
            return self._call(prompt, r, name)

        retries = self.config.answer_retries
        return ask_until_read(call, read, instruction, retries=retries, keep=keep)

    def _call(self, instruction: str, r: int, name: str) -> Trajectory:
        with scratch_dir("evolver-ask-") as folder:
            return self.agent("worker").run(folder, instruction, task_id=f"r{r:03d}-{name}")

    def evaluation_set(self) -> str:
        """The evaluator shown unchanged; the train set's version (`train/e1`)."""
        return self.evaluator.before("train", self.splits.train).label

    def rollouts(self, snapshot: Snapshot, ids, path: Path, attempts: int) -> list[Trajectory]:
        """The final rollouts of `snapshot` on train tasks `ids` (resumed if cut off)."""
        return self.evaluate(snapshot, self.tasks(ids), path, attempts, "train")

    def recorded(self, path: Path) -> list[Trajectory]:
        return final_trajectories(RolloutRecord(path), self.settings.max_infra_reruns)

    # -- what the records say -------------------------------------------------------------

    def cold_start_record(self) -> ColdStart:
        record = read_optional(self.layout.cold_start, ColdStart)
        assert record is not None, "the cold start has not run"
        return record

    def vanilla_runs(self) -> list[Trajectory]:
        """Vanilla's final cold-start rollouts, read once per opening after the cold start
        (then frozen: every screen, gate and ledger entry compares with them)."""
        if self._vanilla_runs is not None:
            return self._vanilla_runs
        runs = self.recorded(self.layout.cold_start_rollouts)
        if self.layout.cold_start.exists():
            self._vanilla_runs = runs
        return runs

    def vanilla(self) -> Confirmed:
        return confirmed(self.vanilla_runs())

    def confirm_of(self, node: Node) -> Confirmed | None:
        return confirmed(self.confirm_runs(node)) if node.confirm_mean is not None else None

    def adoption_refusal(self, node: Node) -> Refusal | None:
        """The host's vetting of promoting `node`: its confirm runs against vanilla's on the
        whole train set (`decisions.adoption`); None when it may be promoted, or when the two
        ran on different versions of train (nothing to judge)."""
        if node.confirm_mean is None or not ledger_entries.comparable_with_vanilla(self, node):
            return None
        return refusal(
            self.experiment.config.comparison,
            ledger_entries.ref(node),
            self.confirm_runs(node),
            self.vanilla_runs(),
            eval_set=node.eval_set or "",
        )

    def confirm_runs(self, node: Node) -> list[Trajectory]:
        """A candidate's final confirm rollouts (train x K; none before its confirm)."""
        return self.recorded(self.layout.candidate(node.round, node.slot, "confirm.jsonl"))

    def taxonomy(self) -> Taxonomy:
        return Taxonomy.model_validate_json(self.layout.taxonomy.read_text())

    def failure_map(self, before: int) -> FailureMap:
        """The latest map written for a round before `before` (the cold start's is round 0)."""
        for r in range(before - 1, -1, -1):
            path = self.layout.failure_map(r)
            if path.exists():
                return FailureMap.model_validate_json(path.read_text())
        raise FileNotFoundError("the cold start's failure map is missing")

    def nodes(self, state: State) -> list[Node]:
        return [node for rd in state.rounds for node in rd.nodes.values()]
