"""Best-of-N on the algorithm seam: the seed on dev (and on train, when that is what the
Workers are shown), its budget fixed; then samples, each a Worker edit of the seed made from
the seed's evidence alone (`evidence.py`), checked for contamination and evaluated on dev,
until N are taken or the budget is spent; the best dev score promoted, the sealed test once.

A sample (`sample`) is `side_by_side`: it holds the step lock shared and its candidate's own
lock, and writes only its own records, so the samples of a round run side by side."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import ClassVar

from flashrsi_dagster.algorithms.base import Step, StepOrderError
from flashrsi_dagster.algorithms.best_of_n import ledger_entries, report
from flashrsi_dagster.algorithms.best_of_n.budget import fixed_budget
from flashrsi_dagster.algorithms.best_of_n.evidence import write_evidence
from flashrsi_dagster.algorithms.best_of_n.plan import (
    SLOT,
    State,
    candidate_name,
    grid,
    next_step,
    rank,
    read_state,
    ready_steps,
    rounds_after_seed,
    sample_of,
    slots_of,
    still_missing,
)
from flashrsi_dagster.algorithms.best_of_n.prompts import worker_instruction
from flashrsi_dagster.algorithms.best_of_n.records import (
    EditRecord,
    Layout,
    Promotion,
    SampleRecord,
    TestResult,
)
from flashrsi_dagster.algorithms.searching import Searching
from flashrsi_dagster.algorithms.turns import one_step_at_a_time, side_by_side
from flashrsi_dagster.controls.spend import Spend
from flashrsi_dagster.decisions import Decision, Ref, eval_set_version
from flashrsi_dagster.decisions.adoption import Refusal, first_admitted, refusal
from flashrsi_dagster.environments.jail import Mount
from flashrsi_dagster.experiment.keys import candidate_key
from flashrsi_dagster.records import Status, Trajectory, read_optional
from flashrsi_dagster.rollouts.engine import final_trajectories
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.scratch import scratch_dir
from flashrsi_dagster.snapshots import HISTORY_DIR, Snapshot


def _candidate(_search: BestOfN, k: int, slot: str = SLOT, *_: object, **__: object) -> str:
    return candidate_key(k, slot)


class BestOfN(Searching):
    name: ClassVar[str] = "best_of_n"
    SEARCH_SPLITS = ("dev",)

    @cached_property
    def layout(self) -> Layout:
        return Layout(self.experiment.paths.records)

    @property
    def width(self) -> int:
        return self.config.side_by_side

    def slots(self) -> tuple[str, ...]:
        return slots_of(self.width)

    def rounds(self) -> int:
        return 1 + rounds_after_seed(self.config.cap, self.width)

    def round_slots(self) -> tuple[tuple[int, str], ...]:
        return ((0, SLOT), *grid(self.config.cap, self.width))  # the last round may be short

    def read_state(self) -> State:
        return read_state(self.layout, self.config.cap, self.width)

    def next_step(self, state: State) -> Step:
        return next_step(state, self.config.cap, self.width)

    def ready_steps(self, state: State) -> tuple[Step, ...]:
        return ready_steps(state, self.config.cap, self.width)

    def step_line(self, state: State, step: Step) -> str:
        return report.step_line(state, step, self.width)

    def summary(self, state: State) -> list[str]:
        return report.summary(state, self.config.cap, self.width)

    def decisions(self, state: State) -> list[Decision]:
        return ledger_entries.decisions(self, state)

    def do(self, step: Step) -> None:
        if step.action == "evaluate_seed":
            self.evaluate_seed()
        elif step.action == "sample" and step.round is not None:
            self.sample(step.round, step.slot or SLOT)
        elif step.action == "promote":
            self.promote()
        elif step.action == "sealed_test":
            self.sealed_test()
        else:
            raise StepOrderError(f"nothing to do for {step.describe()}")

    def _turn(self, action: str) -> State:
        state = self.read_state()
        if (missing := still_missing(state, self.config.cap, self.width, action)) is not None:
            raise StepOrderError(f"{action} refused: {missing}")
        return state

    def round_rollouts(self, k: int, slot: str = SLOT, split: str = "dev") -> list[Trajectory]:
        record = RolloutRecord(self.layout.rollouts(k, slot, split))
        return final_trajectories(record, self.settings.max_infra_reruns)

    # -- steps ----------------------------------------------------------------------------

    @one_step_at_a_time
    def evaluate_seed(self) -> SampleRecord:
        """Round 0: the budget fixed, the seed on dev (and on the split the Workers see)."""
        if (done := self.read_state().round(0)) is not None:
            return done
        if not self.layout.budget.exists():  # fixed once: a matched experiment may go on
            self.write(self.layout.budget, fixed_budget(self.config, self._home))
        seed = self.seed()
        if self.config.shown == "train":
            self.evaluate(
                seed, self.splits.require("train"), self.layout.rollouts(0, SLOT, "train"),
                self.settings.attempts, "train",
            )  # fmt: skip
        return self._evaluate(0, SLOT, seed, None, Spend(), 0)

    @property
    def _home(self) -> Path:
        return self.experiment.paths.root.parent

    @side_by_side(_candidate)
    def sample(self, k: int, slot: str = SLOT) -> SampleRecord:
        """Sample (k, slot) whole: the Worker's edit of the seed, then its evaluation."""
        if (done := read_optional(self.layout.round(k, slot), SampleRecord)) is not None:
            return done
        state = self.read_state()
        ready = ready_steps(state, self.config.cap, self.width)
        if Step("sample", k, slot) not in ready:
            step = self.next_step(state)
            name = candidate_name(k, slot, self.width)
            raise StepOrderError(f"{name} refused: {step.describe()} comes first")
        edit = self.edit(state, k, slot)
        return self._finish(k, slot, edit)

    def edit(self, state: State, k: int, slot: str) -> EditRecord:
        """The Worker's edit of the seed (read back if a run before made it)."""
        if (made := read_optional(self.layout.edit(k, slot), EditRecord)) is not None:
            return made
        store = self.experiment.snapshots
        seed = store.get(state.round(0).snapshot_id)  # type: ignore[union-attr,arg-type]
        i, split = sample_of(k, slot, self.width), self.config.shown
        with scratch_dir("best-of-n-") as tmp:
            evidence = write_evidence(
                tmp / "evidence", store, seed, split, self.round_rollouts(0, SLOT, split)
            )
            edit_dir = store.check_out(seed, tmp / "edit")
            files = [p.relative_to(edit_dir).as_posix() for p in edit_dir.rglob("*") if p.is_file()]
            instruction = worker_instruction(
                seed.components,
                HISTORY_DIR,
                seed.components.prompt_file(files),
                sample=i,
                samples=self.config.cap,
                split=split,
            )
            trajectory = self.agent("worker").edit(
                edit_dir,
                instruction,
                task_id=f"worker-sample-{i}",
                mounts=(Mount(evidence, edit_dir / HISTORY_DIR),),
            )
            self.write(self.layout.worker(k, slot), trajectory)
            edit = self._commit(k, slot, i, seed, edit_dir, trajectory)
            store.forget_checkout(edit_dir)
        return self.write(self.layout.edit(k, slot), edit)

    def _commit(
        self, k: int, slot: str, i: int, seed: Snapshot, edit_dir: Path, worker: Trajectory
    ) -> EditRecord:
        usage = worker.usage
        spend = Spend(
            model_calls=usage.model_calls if usage.model_calls is not None else usage.turns,
            tokens=usage.input_tokens + usage.output_tokens,
        )
        base = {"round": k, "slot": slot, "sample": i, "parent_id": seed.id, "spend": spend}
        if worker.status != Status.SUCCESS:
            detail = worker.error.message if worker.error else "no error recorded"
            reason = f"the Worker failed ({worker.status}): {detail}"
            return EditRecord(**base, status="worker_failed", reason=reason)
        outcome = self.experiment.snapshots.commit_child(
            seed, edit_dir, message=f"best-of-n sample {i}", metadata={"round": k, "slot": slot}
        )
        made = outcome.snapshot
        stats = self.experiment.snapshots.diff_stats(seed, made) if made else None
        return EditRecord(
            **base,
            status=outcome.status,
            reason=outcome.reason,
            snapshot_id=made.id if made else None,
            changed=[f"{c.status} {c.path}" for c in outcome.changed],
            changed_lines=stats.insertions + stats.deletions if stats else 0,
        )

    def _finish(self, k: int, slot: str, edit: EditRecord) -> SampleRecord:
        """The committed edit checked and evaluated on dev, or the sample rejected."""
        reason = edit.reason
        if edit.status == "committed" and edit.snapshot_id:
            snapshot = self.experiment.snapshots.get(edit.snapshot_id)
            verdict = self.check_content(snapshot, self.layout.content(k, slot))
            if not verdict.contaminated:
                return self._evaluate(
                    k, slot, snapshot, edit.parent_id, edit.spend, edit.changed_lines
                )
            reason = f"content check: {verdict.reason}"
        record = SampleRecord(
            round=k,
            slot=slot,
            sample=edit.sample,
            status="rejected",
            parent_id=edit.parent_id,
            spend=edit.spend,
            reason=reason or edit.status,
        )
        self.log(f"{candidate_name(k, slot, self.width)}: rejected — {record.reason}")
        return self._recorded(record)

    def _evaluate(
        self, k: int, slot: str, snapshot: Snapshot, parent: str | None, spend: Spend, lines: int
    ) -> SampleRecord:
        version = self.evaluator.before("dev", self.splits.dev)
        score = self.score(snapshot, self.splits.dev, self.layout.rollouts(k, slot), "dev")
        record = SampleRecord(
            round=k,
            slot=slot,
            sample=None if k == 0 else sample_of(k, slot, self.width),
            status="evaluated",
            snapshot_id=snapshot.id,
            parent_id=parent,
            dev_score=score,
            dev_tasks=len(self.splits.dev),
            changed_lines=lines,
            spend=spend,
            eval_set=version.label,
        )
        name = candidate_name(k, slot, self.width)
        self.log(f"{name}: {snapshot.short_id} dev score {score:.3f} on {version.label}")
        return self._recorded(record)

    def _recorded(self, record: SampleRecord) -> SampleRecord:
        written = self.write(self.layout.round(record.round, record.slot), record)
        self.record_decisions()
        return written

    def evaluate_round(self, k: int, slot: str = SLOT) -> SampleRecord:
        """A candidate's result, made now if it is the search's turn: what the round asset
        asks for."""
        return self.evaluate_seed() if k == 0 else self.sample(k, slot)

    @one_step_at_a_time
    def promote(self) -> Promotion:
        state = self._turn("promote")
        if state.promotion is not None:
            return state.promotion
        self.experiment.records.verify()  # the ranking rests on what the samples recorded
        ranking = rank(state.rounds)
        chosen, refused = first_admitted(ranking, lambda row: self._vet(state, row[1]))
        best_round, best_id, best_score = chosen
        best = state.candidate_of(best_id)
        promotion = Promotion(
            snapshot_id=best_id,
            round=best_round,
            slot=best.slot if best else SLOT,
            dev_score=best_score,
            ranking=ranking,
            refused=refused,
        )
        promotion = self.write(self.layout.promotion, promotion)
        self.record_decisions()
        name = candidate_name(best_round, promotion.slot, self.width)
        self.log(f"promoted {name} ({best_id[:12]}), dev score {best_score:.3f}")
        return promotion

    def _vet(self, state: State, snapshot_id: str) -> Refusal | None:
        """The host's vetting of the ranked sample's adoption against the seed, on the same
        dev tasks (`decisions.adoption`); the seed itself is the baseline."""
        sample, seed = state.candidate_of(snapshot_id), state.round(0)
        if sample is None or seed is None or sample.round == 0:
            return None
        baseline = self.round_rollouts(0)
        return refusal(
            self.experiment.config.comparison,
            Ref(snapshot_id=snapshot_id, round=sample.round, slot=sample.slot),
            self.round_rollouts(sample.round, sample.slot),
            baseline,
            eval_set=seed.eval_set or eval_set_version("dev", (t.task_id for t in baseline)),
        )

    @one_step_at_a_time
    def sealed_test(self) -> TestResult:
        state = self._turn("sealed_test")
        if state.test is not None:
            return state.test
        self.experiment.records.verify()  # neither the promotion nor a result may be forged
        assert state.promotion is not None
        self.record_decisions()
        return self.test_once(
            state.promotion.snapshot_id, self.layout.test_rollouts, self.layout.test
        )
