"""STOP (Zelikman et al., COLM 2024, Algorithm 1) on the algorithm seam.

Round 0 scores the seed improver: its train meta-utility (run jailed on every downstream
task) and its dev meta-utility. Each round k after it applies the current improver — the
best train meta-utility so far among improvers never flagged — to its own code, with the
train meta-utility as its utility and `meta_budget` calls; the program it returns is
committed as a snapshot, checked for contamination, read by the host for circumvention
attempts, then scored (train, dev). After `rounds` rounds the best dev meta-utility is
promoted and only then is the sealed test run, once: the promoted improver's returned
solutions scored on the test split. Steps run one at a time (`one_step_at_a_time`).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from flashrsi_dagster.agents import harness_components, harness_dir
from flashrsi_dagster.algorithms.base import ONLY_SLOT, Step, StepOrderError
from flashrsi_dagster.algorithms.searching import Searching
from flashrsi_dagster.algorithms.stop import ledger_entries, report
from flashrsi_dagster.algorithms.stop.config import SEED_IMPROVER
from flashrsi_dagster.algorithms.stop.plan import (
    State,
    current,
    next_step,
    rank,
    read_state,
    still_missing,
)
from flashrsi_dagster.algorithms.stop.records import (
    Attempt,
    ImproverScore,
    Layout,
    Promotion,
    RoundRecord,
    RunRecord,
    StopTest,
)
from flashrsi_dagster.algorithms.stop.sandbox import Job, run_improver
from flashrsi_dagster.algorithms.stop.scoring import Scorer, digest, meta_description, read_code
from flashrsi_dagster.algorithms.turns import one_step_at_a_time
from flashrsi_dagster.decisions import Decision
from flashrsi_dagster.records import read_optional
from flashrsi_dagster.snapshots import Components, Snapshot


class Stop(Searching):
    name: ClassVar[str] = "stop"

    @cached_property
    def layout(self) -> Layout:
        return Layout(self.experiment.paths.records)

    @cached_property
    def scorer(self) -> Scorer:
        return Scorer(self)

    @cached_property
    def target_seed(self) -> Snapshot:
        """The target's harness as a snapshot: every downstream solution is a child of it."""
        agent = self.experiment.config.agent
        return self.experiment.snapshots.create_seed(
            harness_dir(agent), harness_components(agent), metadata={"stop": "target"}
        )

    @cached_property
    def improver_seed(self) -> Snapshot:
        """The seed improver program as a snapshot (a root of its own)."""
        folder = self.config.improver_dir or SEED_IMPROVER
        components = Components.from_file(folder / "components.yaml")
        return self.experiment.snapshots.create_seed(
            folder, components, message="seed improver", metadata={"stop": "improver"}
        )

    def read[R](self, path: Path, kind: type[R]) -> R | None:
        return read_optional(path, kind)  # type: ignore[type-var]

    def slots(self) -> tuple[str, ...]:
        return (ONLY_SLOT,)

    def rounds(self) -> int:
        return self.config.rounds + 1

    def read_state(self) -> State:
        return read_state(self.layout, self.config.rounds)

    def next_step(self, state: State) -> Step:
        return next_step(state, self.config.rounds)

    def step_line(self, state: State, step: Step) -> str:
        return report.step_line(state, step)

    def summary(self, state: State) -> list[str]:
        return report.summary(self, state)

    def decisions(self, state: State) -> list[Decision]:
        return ledger_entries.decisions(self, state)

    def do(self, step: Step) -> None:
        if step.action in ("evaluate_seed", "improve") and step.round is not None:
            self.evaluate_round(step.round)
        elif step.action == "promote":
            self.promote()
        elif step.action == "sealed_test":
            self.sealed_test()
        else:
            raise StepOrderError(f"nothing to do for {step.describe()}")

    def _turn(self, action: str) -> State:
        state = self.read_state()
        missing = still_missing(state, self.config.rounds, action)
        if missing is not None:
            raise StepOrderError(f"{action} refused: {missing}")
        return state

    # -- steps ----------------------------------------------------------------------------

    @one_step_at_a_time
    def evaluate_round(self, k: int) -> RoundRecord:
        """Round k's result: the seed improver scored at 0, else a self-improvement."""
        state = self.read_state()
        if (done := state.round(k)) is not None:
            return done
        step = next_step(state, self.config.rounds)
        if step.round != k or step.action not in ("evaluate_seed", "improve"):
            raise StepOrderError(f"round {k} refused: {step.describe()} first")
        if k == 0:
            seed = self.improver_seed
            score = self.scorer.improver_score(read_code(self.experiment.snapshots, seed), seed)
            return self._scored(0, score, None)
        return self._improve(state, k)

    def _improve(self, state: State, k: int) -> RoundRecord:
        """The current improver applied to its own code (the run read back if recorded)."""
        parent_round = current(state, k)
        store = self.experiment.snapshots
        parent = store.get(parent_round.snapshot_id)  # type: ignore[arg-type]
        run = read_optional(self.layout.run(k), RunRecord)
        if run is None:  # the run is recorded before its program is scored
            run = self.write(self.layout.run(k), self._self_improve(k, parent))
        if run.returned_digest is None:
            return self._rejected(k, parent.id, f"the improver returned nothing: {run.error}")
        returned = read_code_of(self, run)
        if returned == read_code(store, parent):
            return self._rejected(k, parent.id, "the improver returned its own code unchanged")
        score = self.scorer.improver_score(returned, parent)
        return self._scored(k, score, parent.id, run)

    def _self_improve(self, k: int, parent: Snapshot) -> RunRecord:
        code, tried = read_code(self.experiment.snapshots, parent), []
        job = Job(
            code=code,
            solution=code,
            budget=self.config.meta_budget,
            description=meta_description(self.config.groups, self.config.budget),
            score=lambda program: self.scorer.meta_value(program, parent, tried),
            label=f"self-improvement round {k}",
        )
        outcome = run_improver(
            job, self.config.improver, self.experiment.confinement, self.config.model_calls
        )
        returned, error = outcome.solution, outcome.error
        if returned is not None:
            try:  # its code kept before it is scored
                self.scorer.improver_snapshot(returned, parent)
            except ValueError as exc:
                returned, error = None, f"its program was refused by the snapshot store: {exc}"
        self.log(f"round {k}: the improver scored {len(tried)} program(s) of its own making")
        return RunRecord(
            round=k,
            parent_id=parent.id,
            parent_digest=digest(code),
            returned_digest=digest(returned) if returned is not None else None,
            error=error,
            utility_calls=outcome.utility_calls,
            model_calls=outcome.model_calls,
            tried=tried,
            attempts=outcome.attempts,
        )

    def _scored(
        self, k: int, score: ImproverScore, parent: str | None, run: RunRecord | None = None
    ) -> RoundRecord:
        if score.status != "scored":
            return self._rejected(k, parent, score.reason or "not scored", score)
        version = self.evaluator.before("dev", self.splits.dev)
        dev = self.scorer.scored_on(score, "dev", self.splits.dev, "dev")
        kinds = sorted({a.kind for a in score.attempts})
        record = RoundRecord(
            round=k,
            status="evaluated",
            snapshot_id=score.snapshot_id,
            parent_id=parent,
            digest=score.digest,
            train_meta_utility=score.train_meta_utility,
            dev_score=dev,
            dev_tasks=len(self.splits.dev),
            flagged=len(score.attempts),
            attempt_kinds=kinds,
            reason=f"circumvention attempts flagged: {', '.join(kinds)}" if kinds else None,
            eval_set=version.label,
        )
        self.log(
            f"round {k}: train meta-utility {score.train_meta_utility:.3f}, dev {dev:.3f}"
            + (f" — FLAGGED ({', '.join(kinds)})" if kinds else "")
        )
        return self._recorded(record)

    def _rejected(
        self, k: int, parent: str | None, reason: str, score: ImproverScore | None = None
    ) -> RoundRecord:
        record = RoundRecord(
            round=k,
            status="rejected",
            parent_id=parent,
            snapshot_id=score.snapshot_id if score else None,
            digest=score.digest if score else None,
            reason=reason,
        )
        self.log(f"round {k}: rejected — {reason}")
        return self._recorded(record)

    def _recorded(self, record: RoundRecord) -> RoundRecord:
        written = self.write(self.layout.round(record.round), record)
        self.record_decisions()
        return written

    def improver_record(self, k: int) -> ImproverScore | None:
        """Round k's improver's scores, runs and attempts (None for a round with none)."""
        r = self.read_state().round(k)
        if r is None or r.digest is None:
            return None
        return read_optional(self.layout.improver(r.digest), ImproverScore)

    def round_attempts(self, k: int) -> list[Attempt]:
        """Every attempt of round k: its improver's, and its self-improvement run's."""
        improver = self.improver_record(k)
        run = read_optional(self.layout.run(k), RunRecord)
        return [*(improver.attempts if improver else []), *(run.attempts if run else [])]

    def scorer_record(self, key: str) -> ImproverScore | None:
        return read_optional(self.layout.improver(key), ImproverScore)

    @one_step_at_a_time
    def promote(self) -> Promotion:
        state = self._turn("promote")
        if state.promotion is not None:
            return state.promotion
        self.experiment.records.verify()  # the ranking rests on what the rounds recorded
        ranking = rank(state.rounds, state.caught)
        best_round, best_id, best = ranking[0]
        promotion = Promotion(
            snapshot_id=best_id, round=best_round, dev_score=best, ranking=ranking
        )
        promotion = self.write(self.layout.promotion, promotion)
        self.record_decisions()
        self.log(
            f"promoted round {best_round}'s improver ({best_id[:12]}), dev meta-utility {best:.3f}"
        )
        return promotion

    @one_step_at_a_time
    def sealed_test(self) -> StopTest:
        """The promoted improver's returned solutions on the sealed test split, once."""
        state = self._turn("sealed_test")
        if state.test is not None:
            return state.test
        self.experiment.records.verify()
        assert state.promotion is not None
        tasks = self.unseal_test()
        record = self.improver_record(state.promotion.round)
        assert record is not None, "the promoted round has no improver record"
        version = self.evaluator.before_sealed_test(tasks)
        per_group = [
            self.scorer.scored_on(record.model_copy(update={"groups": [g]}), "test", tasks, "test")
            for g in record.groups
        ]
        result = StopTest(
            snapshot_id=state.promotion.snapshot_id,
            test_score=sum(per_group) / max(1, len(per_group)),
            test_tasks=len(tasks),
            per_group=per_group,
            eval_set=version.label,
        )
        result = self.write(self.layout.test, result)
        self.log(
            f"sealed test of the promoted improver: {result.test_score:.3f} over {len(tasks)} tasks"
        )
        return result


def read_code_of(search: Any, run: RunRecord) -> str:
    """The code the round's run returned, from its snapshot (committed when it returned)."""
    store = search.experiment.snapshots
    made = [s for s in store.history() if s.metadata.get("improver") == run.returned_digest]
    if made:
        return read_code(store, made[0])
    return read_code(store, run.parent_id)  # it returned its parent's own code
