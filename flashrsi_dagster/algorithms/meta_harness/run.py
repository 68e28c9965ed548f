"""Meta-Harness (seed 000): one Worker candidate per step, best-on-dev promotion, test once.

Round 0 evaluates the seed on dev. Step k gives the Worker a fresh seed checkout with the
history folder inside, removes the history, commits the edit as a child of the seed and
evaluates it on the whole dev split; a no-op or illegal edit uses up the step and is recorded
as a rejection. A Worker failure aborts. After `max_steps`, the best dev score is promoted
(ties keep the earlier snapshot) and only then is the sealed test split evaluated, once.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import ClassVar

import pandas as pd

from flashrsi_dagster.algorithms.base import Log, Step, StepOrderError
from flashrsi_dagster.algorithms.builders import DEFAULT_BUILDERS, Builders
from flashrsi_dagster.algorithms.meta_harness import decisions, report
from flashrsi_dagster.algorithms.meta_harness.history import HISTORY, HistoryView
from flashrsi_dagster.algorithms.meta_harness.plan import (
    SLOT,
    State,
    next_step,
    rank,
    read_state,
    stale,
    still_missing,
)
from flashrsi_dagster.algorithms.meta_harness.prompts import prompt_file_of, worker_instruction
from flashrsi_dagster.algorithms.meta_harness.records import (
    EditRecord,
    Layout,
    Promotion,
    RoundRecord,
    TestResult,
)
from flashrsi_dagster.algorithms.searching import Searching
from flashrsi_dagster.algorithms.turns import one_step_at_a_time
from flashrsi_dagster.benchmarks.loading import load_splits
from flashrsi_dagster.benchmarks.splits import Splits
from flashrsi_dagster.decisions import Decision
from flashrsi_dagster.environments.jail import Mount
from flashrsi_dagster.experiment import Experiment
from flashrsi_dagster.records import Status, Trajectory, read_optional
from flashrsi_dagster.rollouts.engine import (
    Progress,
    final_trajectories,
)
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.rollouts.scores import scores_frame
from flashrsi_dagster.scratch import scratch_dir
from flashrsi_dagster.snapshots import Snapshot


class MetaHarness(Searching):
    """Meta-Harness on the algorithm seam. Opening it is cheap (planning reads records only);
    the benchmark and the dev split are loaded by the first step that needs them, and the
    test split only by the sealed test."""

    name: ClassVar[str] = "meta_harness"

    def __init__(
        self,
        experiment: Experiment,
        *,
        builders: Builders = DEFAULT_BUILDERS,
        log: Log = print,
        progress: Progress | None = None,
    ) -> None:
        super().__init__(experiment, builders=builders, log=log, progress=progress)
        self.max_steps = self.config.max_steps
        self.layout = Layout.of(experiment.paths.records)
        self.history = HistoryView.for_experiment(experiment.snapshots, self.layout)

    def slots(self) -> tuple[str, ...]:
        return (SLOT,)

    def rounds(self) -> int:
        return self.max_steps + 1

    @cached_property
    def splits(self) -> Splits:
        """Train and dev; the test tasks are dropped as soon as the splits are drawn."""
        splits = load_splits(self.experiment.config.benchmark, self.benchmark).without_test()
        splits.require("dev")
        return splits

    # -- state ----------------------------------------------------------------------------

    def read_state(self) -> State:
        return read_state(self.layout, self.max_steps)

    def next_step(self, state: State) -> Step:
        return next_step(state, self.max_steps)

    def step_line(self, state: State, step: Step) -> str:
        return report.step_line(state, step)

    def summary(self, state: State) -> list[str]:
        return report.summary(state)

    def decisions(self, state: State) -> list[Decision]:
        """The ledger entries the records imply (see `meta_harness/decisions.py`)."""
        return decisions.decisions(self, state)

    def _require_turn(self, action: str) -> State:
        """The state, if `action` may run now; else StepOrderError, nothing changed."""
        state = self.read_state()
        missing = still_missing(state, self.max_steps, action)
        if missing is not None:
            what = {"promote": "promotion", "sealed_test": "the sealed test"}[action]
            raise StepOrderError(f"{what} refused: {missing}")
        return state

    def do(self, step: Step) -> None:
        actions = {
            "evaluate_seed": lambda: self.evaluate_seed(),
            "propose": lambda: self.propose(step.round or 0),
            "promote": self.promote,
            "sealed_test": self.sealed_test,
        }
        if step.action not in actions:
            raise StepOrderError(f"nothing to do for {step.describe()}")
        actions[step.action]()

    # -- steps ----------------------------------------------------------------------------

    @one_step_at_a_time
    def seed(self) -> Snapshot:
        """The seed snapshot: made from the role's harness once, then always that one, even
        if the folder has changed since (a re-evaluated round 0 must not fork the search)."""
        store = self.experiment.snapshots
        evaluated = read_optional(self.layout.round(0), RoundRecord)
        if evaluated is not None and evaluated.snapshot_id:
            return store.get(evaluated.snapshot_id)
        return super().seed()

    @one_step_at_a_time
    def evaluate_seed(self) -> RoundRecord:
        seed = self.seed()
        return self._evaluate(0, seed, parent_id=None)

    def round_rollouts(self, k: int) -> list[Trajectory]:
        """The final rollout of every dev task of round k (none for a rejected step)."""
        record = RolloutRecord(self.layout.rollouts(k))
        return final_trajectories(record, self.settings.max_infra_reruns)

    def round_frame(self, k: int) -> pd.DataFrame:
        """The scores table of round k's dev evaluation (empty for a rejected step)."""
        return scores_frame(self.round_rollouts(k))

    @one_step_at_a_time
    def propose(self, k: int) -> RoundRecord:
        """Step k whole: the Worker's edit, then its evaluation (or the rejection)."""
        self.edit(k)
        return self.finish_round(k)

    @one_step_at_a_time
    def edit(self, k: int) -> EditRecord:
        """The Worker's edit of step k (read back if it was already made). A new edit waits
        for every earlier round: the Worker's history must be complete."""
        made = read_optional(self.layout.edit(k), EditRecord)
        if made is not None:
            return made
        state = self.read_state()
        missing = [j for j in range(k) if state.round(j) is None]
        if missing or state.test is not None or not 1 <= k <= self.max_steps:
            reason = (
                f"round(s) {', '.join(map(str, missing))} have no result yet"
                if missing
                else "the search is over (the sealed test has run)"
                if state.test is not None
                else f"rounds are 1..{self.max_steps}"
            )
            raise StepOrderError(f"the Worker's edit of round {k} refused: {reason}")
        return self._edit(k)

    @one_step_at_a_time
    def finish_round(self, k: int) -> RoundRecord:
        """Evaluate step k's committed candidate on dev, or record its rejection."""
        edit = read_optional(self.layout.edit(k), EditRecord)
        assert edit is not None, f"round {k} has no edit yet"
        if edit.status == "committed" and edit.snapshot_id:
            return self._evaluate(
                k, self.experiment.snapshots.get(edit.snapshot_id), parent_id=edit.parent_id
            )
        done = read_optional(self.layout.round(k), RoundRecord)
        if done is not None and done.status != "evaluated":
            self.record_decisions()  # read back: a crash may have come before its entry
            return done
        status = "worker_failed" if edit.status == "worker_failed" else "rejected"
        if status == "worker_failed":
            self.history.discard()  # the experiment is aborted
        record = RoundRecord(round=k, status=status, parent_id=edit.parent_id, reason=edit.reason)
        record = self.write(self.layout.round(k), record)
        self.record_decisions()
        self.log(f"round {k}: {status} — {record.reason}")
        return record

    @one_step_at_a_time
    def promote(self) -> Promotion:
        """The best dev score over all rounds, once every round has its result. Before the
        sealed test it re-ranks whenever a round's score changed; after it, the promotion is
        frozen and a changed ranking is only reported (`ranking_now`)."""
        state = self._require_turn("promote")
        self.experiment.records.verify()  # the ranking must rest on what the rounds recorded
        if state.promotion is not None and (state.test is not None or not stale(state)):
            self.record_decisions()  # read back: a crash may have come before its entries
            if stale(state):
                self.log(
                    "the ranking changed after the sealed test; the promotion stays frozen "
                    f"on round {state.promotion.round} and the test is not run again"
                )
            return state.promotion
        ranking = rank(list(state.rounds))
        best_round, best_id, best_score = ranking[0]
        promotion = Promotion(
            snapshot_id=best_id, round=best_round, dev_score=best_score, ranking=ranking
        )
        self.write(self.layout.promotion, promotion)
        self.record_decisions()
        self.history.discard()  # the search is over: no Worker step will need it again
        self.log(f"promoted round {best_round} ({best_id[:12]}), dev score {best_score:.3f}")
        return promotion

    @one_step_at_a_time
    def evaluate_round(self, k: int, *, again: bool = False) -> RoundRecord:
        """Round k's evaluation, read back if it was made; `again`: from scratch, as a
        rematerialization of the round asks (see `restart_round`)."""
        if again:
            self.restart_round(k)
        return self.evaluate_seed() if k == 0 else self.finish_round(k)

    def restart_round(self, k: int) -> None:
        """Evaluate round k again from scratch (a rematerialization): the same snapshot, new
        rollouts; the old record is kept beside, renamed, and no new snapshot is made."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        for path in (self.layout.rollouts(k), self.layout.round(k)):
            if path.exists():
                archived = path.with_name(f"{path.stem}.replaced-{stamp}{path.suffix}")
                self.experiment.records.move(path, archived)

    @one_step_at_a_time
    def sealed_test(self) -> TestResult:
        state = self._require_turn("sealed_test")
        self.experiment.records.verify()  # neither the promotion nor a result may be forged
        promotion, done = state.promotion, state.test
        assert promotion is not None
        self.record_decisions()  # the promotion's entries, should a crash have cut them off
        if done is not None:
            if done.snapshot_id != promotion.snapshot_id:
                raise RuntimeError(
                    f"the sealed test was already evaluated, on {done.snapshot_id[:12]}; it is "
                    f"evaluated once per experiment, so {promotion.snapshot_id[:12]} is not"
                )
            return done
        return self.test_once(promotion.snapshot_id, self.layout.test_rollouts, self.layout.test)

    # -- parts ----------------------------------------------------------------------------

    def _evaluate(self, k: int, snapshot: Snapshot, parent_id: str | None) -> RoundRecord:
        version = self.evaluator.before("dev", self.splits.dev)
        score = self.score(snapshot, self.splits.dev, self.layout.rollouts(k), "dev")
        record = RoundRecord(
            eval_set=version.label,
            round=k,
            status="evaluated",
            snapshot_id=snapshot.id,
            parent_id=parent_id,
            dev_score=score,
            dev_tasks=len(self.splits.dev),
        )
        self.write(self.layout.round(k), record)
        self.log(f"round {k}: {snapshot.short_id} dev score {score:.3f} on {version.label}")
        return record

    def _edit(self, k: int) -> EditRecord:
        store, seed = self.experiment.snapshots, self.seed()
        with scratch_dir("edit-") as tmp:
            edit_dir = store.check_out(seed, tmp / "edit")
            files = [p.relative_to(edit_dir).as_posix() for p in edit_dir.rglob("*") if p.is_file()]
            instruction = worker_instruction(
                seed.components, HISTORY, prompt_file_of(files, seed.components)
            )
            trajectory = self._worker_step(k, edit_dir, instruction)
            self.write(self.layout.worker(k), trajectory)
            edit = self._commit(k, seed, edit_dir, trajectory)
            store.forget_checkout(edit_dir)
        return self.write(self.layout.edit(k), edit)

    def _worker_step(self, k: int, edit_dir: Path, instruction: str) -> Trajectory:
        """The Worker's run with the history view at `.history` (read-only in its jail)."""
        worker = self.agent("worker")
        view = self.history.update(
            list(self.read_state().rounds), watch=not worker.confinement.jailed
        )
        trajectory = worker.edit(
            edit_dir,
            instruction,
            task_id=f"worker-{k}",
            mounts=(Mount(view, edit_dir / HISTORY),),
        )
        if not worker.confinement.jailed:
            self.history.intact()  # an unconfined Worker could have written to it
        return trajectory

    def _commit(self, k: int, seed: Snapshot, edit_dir: Path, worker: Trajectory) -> EditRecord:
        if worker.status != Status.SUCCESS:
            detail = worker.error.message if worker.error else "no error recorded"
            reason = f"the Worker failed ({worker.status}): {detail}"
            return EditRecord(round=k, status="worker_failed", parent_id=seed.id, reason=reason)
        outcome = self.experiment.snapshots.commit_child(
            seed, edit_dir, message=f"meta-harness step {k}", metadata={"round": k}
        )
        return EditRecord(
            round=k,
            status=outcome.status,
            parent_id=seed.id,
            reason=outcome.reason,
            snapshot_id=outcome.snapshot.id if outcome.snapshot else None,
            changed=[f"{c.status} {c.path}" for c in outcome.changed],
        )
