"""Random search on the algorithm seam: the seed on dev, then each round one edit drawn from
the config's list, applied to the seed as a new snapshot and evaluated on dev; the best dev
score promoted, the sealed test once. Steps run one at a time (`one_step_at_a_time`); each
reads back what a run before it already wrote."""

from __future__ import annotations

from functools import cached_property
from typing import ClassVar

from flashrsi_dagster.algorithms.base import ONLY_SLOT, Step, StepOrderError
from flashrsi_dagster.algorithms.searching import Searching
from flashrsi_dagster.algorithms.turns import one_step_at_a_time
from flashrsi_dagster.decisions import Decision
from flashrsi_dagster.rollouts.engine import final_trajectories
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.scratch import scratch_dir
from flashrsi_dagster.snapshots import Snapshot
from tests.algorithms.random_search import ledger_entries
from tests.algorithms.random_search.plan import (
    State,
    drawn,
    next_step,
    rank,
    read_state,
    still_missing,
)
from tests.algorithms.random_search.records import Layout, Promotion, RoundRecord, TestResult


class RandomSearch(Searching):
    name: ClassVar[str] = "random_search"

    @cached_property
    def layout(self) -> Layout:
        return Layout(self.experiment.paths.records)

    def slots(self) -> tuple[str, ...]:
        return (ONLY_SLOT,)

    def rounds(self) -> int:
        return self.config.rounds + 1

    def read_state(self) -> State:
        return read_state(self.layout, self.config.rounds)

    def next_step(self, state: State) -> Step:
        return next_step(state, self.config.rounds)

    def step_line(self, state: State, step: Step) -> str:
        r = state.round(step.round) if step.round is not None else None
        if r is not None:
            score = "" if r.dev_score is None else f", dev score {r.dev_score:.3f}"
            return f"   round {r.round}: {r.status}{score}" + (f" — {r.reason}" if r.reason else "")
        if state.test is not None:
            return f"   sealed test of the promoted snapshot: {state.test.test_score:.3f}"
        p = state.promotion
        return f"   promoted round {p.round}, dev score {p.dev_score:.3f}" if p else "   done"

    def summary(self, state: State) -> list[str]:
        lines = []
        for r in state.rounds:
            score = "-" if r.dev_score is None else f"{r.dev_score:.3f}"
            edit = "the seed" if r.edit is None else f"edit {r.edit}"
            lines.append(f"round {r.round}: {r.status:<9} dev {score} ({edit})")
        if p := state.promotion:
            lines.append(f"promoted: round {p.round}, {p.snapshot_id[:12]}, dev {p.dev_score:.3f}")
        if t := state.test:
            lines.append(f"sealed test: {t.test_score:.3f} over {t.test_tasks} tasks")
        return lines

    def decisions(self, state: State) -> list[Decision]:
        return ledger_entries.decisions(self, state)

    def do(self, step: Step) -> None:
        if step.action == "evaluate" and step.round is not None:
            self.evaluate_round(step.round)
        elif step.action == "promote":
            self.promote()
        elif step.action == "sealed_test":
            self.sealed_test()
        else:
            raise StepOrderError(f"nothing to do for {step.describe()}")

    def _turn(self, action: str) -> State:
        state = self.read_state()
        if (missing := still_missing(state, self.config.rounds, action)) is not None:
            raise StepOrderError(f"{action} refused: {missing}")
        return state

    # -- steps ----------------------------------------------------------------------------

    @one_step_at_a_time
    def evaluate_round(self, k: int) -> RoundRecord:
        """Round k's result: the seed's dev evaluation at 0, else the drawn edit's."""
        state = self.read_state()
        if (done := state.round(k)) is not None:
            return done
        if next_step(state, self.config.rounds) != Step("evaluate", k, ONLY_SLOT):
            raise StepOrderError(f"round {k} refused: {self.next_step(state).describe()} first")
        if k == 0:
            return self._evaluate(0, self.seed(), None, None)
        seed = self.experiment.snapshots.get(state.round(0).snapshot_id)  # type: ignore[union-attr,arg-type]
        i = drawn(self.config.seed, k, len(self.config.edits))
        candidate, reason = self._apply(k, i, seed)
        if candidate is not None:
            verdict = self.check_content(candidate, self.layout.content(k))
            if not verdict.contaminated:
                return self._evaluate(k, candidate, seed.id, i)
            reason = f"content check: {verdict.reason}"
        record = RoundRecord(round=k, edit=i, status="rejected", parent_id=seed.id, reason=reason)
        self.log(f"round {k}: edit {i} rejected — {reason}")
        return self._recorded(record)

    def _apply(self, k: int, i: int, seed: Snapshot) -> tuple[Snapshot | None, str | None]:
        """Edit i on a checkout of the seed, committed as round k's snapshot (the one made
        by a run that crashed before its record, if any), or why there is none."""
        store, edit = self.experiment.snapshots, self.config.edits[i]
        made = [
            s for s in store.history() if s.parent_id == seed.id and s.metadata.get("round") == k
        ]
        if made:
            return made[0], None
        with scratch_dir("random-search-") as tmp:
            checkout = store.check_out(seed, tmp / "edit")
            path = checkout / edit.file
            text = edit.apply(path.read_text()) if path.is_file() else None
            if text is None:
                return None, f"edit {i} does not apply to the seed's {edit.file}"
            path.write_text(text)
            outcome = store.commit_child(
                seed, checkout, message=f"random search round {k}", metadata={"round": k}
            )
            store.forget_checkout(checkout)
        return outcome.snapshot, outcome.reason

    def _evaluate(self, k: int, snapshot: Snapshot, parent: str | None, i: int | None):
        version = self.evaluator.before("dev", self.splits.dev)
        score = self.score(snapshot, self.splits.dev, self.layout.rollouts(k), "dev")
        record = RoundRecord(
            round=k,
            edit=i,
            status="evaluated",
            snapshot_id=snapshot.id,
            parent_id=parent,
            dev_score=score,
            dev_tasks=len(self.splits.dev),
            eval_set=version.label,
        )
        self.log(f"round {k}: {snapshot.short_id} dev score {score:.3f} on {version.label}")
        return self._recorded(record)

    def _recorded(self, record: RoundRecord) -> RoundRecord:
        written = self.write(self.layout.round(record.round), record)
        self.record_decisions()
        return written

    def round_rollouts(self, k: int):
        record = RolloutRecord(self.layout.rollouts(k))
        return final_trajectories(record, self.settings.max_infra_reruns)

    @one_step_at_a_time
    def promote(self) -> Promotion:
        state = self._turn("promote")
        if state.promotion is not None:
            return state.promotion
        self.experiment.records.verify()  # the ranking rests on what the rounds recorded
        ranking = rank(state.rounds)
        best_round, best_id, best_score = ranking[0]
        promotion = Promotion(
            snapshot_id=best_id, round=best_round, dev_score=best_score, ranking=ranking
        )
        promotion = self.write(self.layout.promotion, promotion)
        self.record_decisions()
        self.log(f"promoted round {best_round} ({best_id[:12]}), dev score {best_score:.3f}")
        return promotion

    @one_step_at_a_time
    def sealed_test(self) -> TestResult:
        state = self._turn("sealed_test")
        if state.test is not None:
            return state.test
        self.experiment.records.verify()  # neither the promotion nor a result may be forged
        assert state.promotion is not None
        return self.test_once(
            state.promotion.snapshot_id, self.layout.test_rollouts, self.layout.test
        )
