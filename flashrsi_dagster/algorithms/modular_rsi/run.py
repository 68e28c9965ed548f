"""ModularRSI (seed 001) on the algorithm seam.

Every module's branch starts from the seed snapshot; branches share nothing, so they run side
by side (`ready_steps`: each branch's next step), each branch's steps one after another. A
branch step takes one batch of its schedule (train shuffled per epoch, seeded):
the branch's current version runs each task `num_rollouts` times; the Worker analyses the
grouped rollouts into findings; the best-supported files (`edit_budget`) go into one edit of
the current version; the candidate passes the scope, compile, review and execution gates or
the previous version is kept. Then the Worker merges the changed branches into the seed
(`references.py`), each merge or repair gated the same way and checked on the whole evolution
set; the promotion picks the last merge that runs, else the initial merge if it ran, else the
seed; the sealed test runs once. Dev takes no part.
"""

from __future__ import annotations

import random
from functools import cached_property
from pathlib import Path
from typing import ClassVar

from flashrsi_dagster.agents import Agent
from flashrsi_dagster.algorithms.base import Step, StepOrderError
from flashrsi_dagster.algorithms.modular_rsi import ledger_entries, report
from flashrsi_dagster.algorithms.modular_rsi.config import ModularRSIConfig
from flashrsi_dagster.algorithms.modular_rsi.groups import remember
from flashrsi_dagster.algorithms.modular_rsi.modules import INTEGRATION, ordered
from flashrsi_dagster.algorithms.modular_rsi.plan import (
    Plan,
    State,
    integration_phase,
    next_step,
    read_state,
    ready_steps,
    still_missing,
)
from flashrsi_dagster.algorithms.modular_rsi.records import (
    Layout,
    Promotion,
    Schedule,
    StepRecord,
    TestResult,
)
from flashrsi_dagster.algorithms.modular_rsi.steps import BranchStep, IntegrationStep
from flashrsi_dagster.algorithms.searching import Searching
from flashrsi_dagster.algorithms.turns import one_step_at_a_time, side_by_side
from flashrsi_dagster.benchmarks.base import Task
from flashrsi_dagster.decisions import Decision, Ref
from flashrsi_dagster.decisions.adoption import refusal
from flashrsi_dagster.evaluator import basis
from flashrsi_dagster.records import Trajectory, read_optional
from flashrsi_dagster.rollouts.engine import (
    final_trajectories,
)
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.snapshots import Snapshot


def make_schedule(train: list[str], epochs: int, batch_size: int, seed: int) -> Schedule:
    """Train shuffled afresh each epoch (seeded by the experiment's seed and the epoch), cut
    into batches; every module gets the same schedule."""
    batches = []
    for epoch in range(epochs):
        order = list(train)
        random.Random(f"{seed}:epoch:{epoch}").shuffle(order)
        batches += [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    return Schedule(
        batches=batches, epochs=epochs, batches_per_epoch=len(batches) // max(epochs, 1)
    )


class ModularRSI(Searching):
    name: ClassVar[str] = "modular_rsi"
    SEARCH_SPLITS = ("train",)

    config: ModularRSIConfig

    @cached_property
    def modules(self) -> tuple[str, ...]:
        return ordered(self.config.modules)

    @cached_property
    def layout(self) -> Layout:
        return Layout.of(self.experiment.paths.records)

    # -- the seam -------------------------------------------------------------------------

    def slots(self) -> tuple[str, ...]:
        return (*self.modules, INTEGRATION)

    def rounds(self) -> int:
        return self.plan.rounds

    def round_slots(self) -> tuple[tuple[int, str], ...]:
        plan = self.plan  # each branch its steps, the integration its rounds (if any runs)
        branches = [(k, m) for k in range(plan.branch_steps) for m in plan.modules]
        return (*branches, *((r, INTEGRATION) for r in range(plan.integration_rounds + 1)))

    @property
    def plan(self) -> Plan:
        return Plan(self.modules, len(self.schedule.batches), self.config.integration_rounds)

    def read_state(self) -> State:
        return read_state(self.layout, self.plan)

    def next_step(self, state: State) -> Step:
        return next_step(state, self.plan)

    def ready_steps(self, state: State) -> tuple[Step, ...]:
        return ready_steps(state, self.plan)

    def step_line(self, state: State, step: Step) -> str:
        return report.step_line(state, step)

    def summary(self, state: State) -> list[str]:
        return report.summary(state)

    def decisions(self, state: State) -> list[Decision]:
        """The ledger entries the records imply (see `modular_rsi/ledger_entries.py`)."""
        return ledger_entries.decisions(self, state)

    def do(self, step: Step) -> None:
        if step.action == "branch" and step.slot in self.modules and step.round is not None:
            self.branch_step(step.slot, step.round)
        elif step.action == "integrate" and step.round is not None:
            self.integrate(step.round)
        elif step.action == "promote":
            self.promote()
        elif step.action == "sealed_test":
            self.sealed_test()
        else:
            raise StepOrderError(f"nothing to do for {step.describe()}")

    # -- what the steps share -------------------------------------------------------------

    def evaluation_set(self) -> str:
        """The evaluator shown unchanged; the evolution set's version (`train/e1`)."""
        return self.evaluator.before("train", self.splits.train).label

    @cached_property
    def schedule(self) -> Schedule:
        """The recorded schedule, else the one the first step will record."""
        recorded = read_optional(self.layout.schedule, Schedule)
        if recorded is not None:
            return recorded
        train = [t.id for t in self.splits.train]
        return make_schedule(
            train,
            self.config.epochs,
            self.config.batch_size,
            self.experiment.config.experiment.seed,
        )

    @property
    def reviewer(self) -> Agent:
        return self.agent("reviewer" if self.config.review_by == "reviewer" else "worker")

    def step_rollouts(self, slot: str, k: int) -> list[Trajectory]:
        """The final rollouts of a step: a branch step's batch, an integration's full check."""
        path = self.layout.check(k) if slot == INTEGRATION else self.layout.rollouts(slot, k)
        return final_trajectories(RolloutRecord(path), self.settings.max_infra_reruns)

    def memory(self, module: str, *, before: int) -> dict[str, Trajectory]:
        """The module's earliest success of each task in its batches before step `before`;
        nothing of another module's."""
        memory: dict[str, Trajectory] = {}
        for j in range(before):
            memory = remember(memory, self.step_rollouts(module, j))
        return memory

    def rollouts(
        self, snapshot: Snapshot, tasks: tuple[Task, ...], path: Path, attempts: int
    ) -> list[Trajectory]:
        """Train rollouts of `snapshot`, the evaluator shown to be the recorded one first."""
        self.evaluation_set()
        return self.evaluate(snapshot, tasks, path, attempts, split="train")

    def _require(self, state: State, step: Step) -> None:
        """Refuse `step` unless it is the search's turn (a done step is read back instead)."""
        if state.test is not None:
            raise StepOrderError(f"{step.describe()} refused: the sealed test has run")
        ready = self.ready_steps(state)
        if step not in ready:
            raise StepOrderError(f"{step.describe()} refused: {ready[0].describe()} comes first")

    # -- steps ----------------------------------------------------------------------------

    @side_by_side(lambda self, module, k: f"branch-{module}")
    def branch_step(self, module: str, k: int) -> StepRecord:
        """Step k of the module's branch (read back if it was made), beside the other
        branches' steps: it writes only its own step's records and snapshot; the ledger
        entry goes in under the ledger's lock (in the order the steps end)."""
        done = read_optional(self.layout.step(module, k), StepRecord)
        if done is not None:
            self.record_decisions()  # read back: a crash may have come before its entry
            return done
        state = self.read_state()
        self._require(state, Step("branch", k, module))
        with self.experiment.lock("schedule").held():  # the first steps start together
            if not self.layout.schedule.exists():
                self.write(self.layout.schedule, self.schedule)
        record = self.write(self.layout.step(module, k), BranchStep(self, state, module, k).run())
        self.record_decisions()
        self.log(f"{module} step {k}: {record.status} — {record.reason}")
        return record

    @one_step_at_a_time
    def integrate(self, r: int) -> StepRecord:
        """Integration round r: the merge, or a repair of the merged version."""
        done = read_optional(self.layout.step(INTEGRATION, r), StepRecord)
        if done is not None:
            self.record_decisions()
            return done
        state = self.read_state()
        self._require(state, Step("integrate", r, INTEGRATION))
        made = IntegrationStep(self, state, r, integration_phase(state, r)).run()
        record = self.write(self.layout.step(INTEGRATION, r), made)
        self.record_decisions()
        self.log(f"integration round {r}: {record.status} — {record.reason}")
        return record

    @one_step_at_a_time
    def promote(self) -> Promotion:
        """The version the integration leaves: its last accepted merge if that runs on every
        evolution task, else the initial merge if it did, else the seed. Frozen."""
        state = self.read_state()
        missing = still_missing(state, self.plan, "promote")
        if missing is not None:
            raise StepOrderError(f"promotion refused: {missing}")
        if state.promotion is not None:
            self.record_decisions()
            return state.promotion
        self.experiment.records.verify()
        chosen = choose(state, self.modules, self.seed().id)
        if chosen.snapshot_id != self.seed().id:
            chosen = self._vetted(state, chosen, self.baseline_check())
        promotion = self.write(self.layout.promotion, chosen)
        self.record_decisions()
        self.log(f"promoted {promotion.snapshot_id[:12]} ({promotion.source}): {promotion.reason}")
        return promotion

    def _vetted(self, state: State, chosen: Promotion, baseline: list[Trajectory]) -> Promotion:
        """The host's vetting of the chosen version's adoption against the seed on every
        evolution task (`decisions.adoption`): refused, the seed stays the baseline."""
        source = ledger_entries.promoted_from(state, chosen.snapshot_id)
        if source is None:
            return chosen
        found = refusal(
            self.experiment.config.comparison,
            Ref(snapshot_id=chosen.snapshot_id, round=source.round, slot=INTEGRATION),
            self.step_rollouts(INTEGRATION, source.round),
            baseline,
            eval_set=ledger_entries.checked_eval_set(self, source),
        )
        if found is None:
            return chosen
        return Promotion(
            snapshot_id=self.seed().id,
            source="seed",
            reason=f"the {chosen.source.replace('_', ' ')} (integration round {source.round}) "
            "was refused by the trade-off rule against the seed; the seed stays the baseline",
            branches=chosen.branches,
            refused=[found],
        )

    def baseline_check(self) -> list[Trajectory]:
        """The seed on every evolution task, once per task as the full check runs the merge:
        the baseline the promoted version is compared with (resumed if cut off)."""
        return self.rollouts(self.seed(), self.splits.train, self.layout.baseline_check, 1)

    @one_step_at_a_time
    def sealed_test(self) -> TestResult:
        state = self.read_state()
        missing = still_missing(state, self.plan, "sealed_test")
        if missing is not None:
            raise StepOrderError(f"the sealed test refused: {missing}")
        if state.test is not None:
            return state.test
        self.experiment.records.verify()
        assert state.promotion is not None
        self.record_decisions()  # the promotion's entry, should a crash have cut it off
        return self.test_once(
            state.promotion.snapshot_id, self.layout.test_rollouts, self.layout.test
        )


def choose(state: State, modules: tuple[str, ...], seed_id: str) -> Promotion:
    """The seed's rule for the result of the integration (see `ModularRSI.promote`)."""
    branches = {m: state.current(m, 1 << 30, seed_id) for m in modules}
    merges = [
        r for r in state.branch(INTEGRATION) if r.status == "accepted" and r.check is not None
    ]
    if not merges:
        reason = (
            "no branch changed the seed"
            if not any(state.changed(m) for m in modules)
            else "no merge of the branches was accepted"
        )
        return Promotion(snapshot_id=seed_id, source="seed", reason=reason, branches=branches)
    last = merges[-1]
    assert last.check is not None
    if last.check.passed:
        return Promotion(
            snapshot_id=last.current_id,
            source="final_merge",
            reason=f"integration round {last.round}'s version ran every evolution task "
            f"(score {last.check.score:.3f}{_on(last.check.eval_set)})",
            branches=branches,
        )
    # Seed 001: the initial merge, if it passed the full check, else the seed; a repair that
    # passed and was then repaired again into a broken version is not a fallback. A pass on
    # another version of the evolution set does not show the version runs on this one's tasks
    # (`evaluator.compare`).
    initial = merges[0]
    assert initial.check is not None
    broken = ", ".join(last.check.runtime_errors)
    if initial.check.passed and basis(initial.check.eval_set, last.check.eval_set).comparable:
        return Promotion(
            snapshot_id=initial.current_id,
            source="initial_merge",
            reason=f"the final version still breaks on {broken}; the initial merge "
            f"(integration round {initial.round}) passed the full check"
            f"{_on(last.check.eval_set)}",
            branches=branches,
        )
    return Promotion(
        snapshot_id=seed_id,
        source="seed",
        reason=f"the final version still breaks on {broken} and the initial merge did not "
        "pass the full check",
        branches=branches,
    )


def _on(eval_set: str | None) -> str:
    return f" on {eval_set}" if eval_set else ""
