"""Meta-Harness (seed 000): Worker candidates round by round, best-on-dev promotion, test once.

Round 0 evaluates the seed on dev (and each of `initial_harnesses`, slots c1, …: the best of
them is the start, the checkout every later candidate is written in). Each round k after it
has `candidates_per_round` candidate slots (c0, c1, …; the seed leaves out what the paper
allows, several per round: default 1).
Each candidate gives a Worker a fresh checkout of the start (the seed by default) with the
history folder inside (every candidate of the rounds before k, and nothing of round k: the
candidates of a round do not see each other, so they run side by side and their order does not
matter), removes the history, commits the edit as a child of the start and evaluates it on the
whole dev split; a no-op or
illegal edit uses up its slot and is recorded as a rejection. A Worker failure aborts. After
`max_steps` rounds, the best dev score is promoted (ties keep the earlier round, then the
lower slot) and only then is the sealed test split evaluated, once (with
`sealed_test_frontier`, then once more for each other member of the frontier the promotion
froze, each once, never a selection).

A candidate's steps (`propose`, `edit`, `finish_round`) are `side_by_side`: they hold the step
lock shared and their candidate's own lock, and write only that candidate's records; so they
call nothing that takes the step lock exclusively (the seed is read from round 0's record).
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import ClassVar

import pandas as pd

from flashrsi_dagster.agents import harness_components
from flashrsi_dagster.algorithms.base import Step, StepOrderError
from flashrsi_dagster.algorithms.improver import improver_note
from flashrsi_dagster.algorithms.meta_harness import ledger_entries, report
from flashrsi_dagster.algorithms.meta_harness.coordinated import (
    folder_digest,
    folder_problem,
    twin_reason,
)
from flashrsi_dagster.algorithms.meta_harness.frontier import frontier
from flashrsi_dagster.algorithms.meta_harness.history import HISTORY, HistoryView
from flashrsi_dagster.algorithms.meta_harness.plan import (
    SLOT,
    State,
    candidate_name,
    grid,
    improver_of,
    next_step,
    rank,
    read_state,
    ready_steps,
    slot_number,
    slots_of,
    stale,
    start_of,
    still_missing,
    unfinished_rounds,
)
from flashrsi_dagster.algorithms.meta_harness.prompts import start_words, worker_instruction
from flashrsi_dagster.algorithms.meta_harness.records import (
    EditRecord,
    Layout,
    Promotion,
    RoundRecord,
    TestResult,
)
from flashrsi_dagster.algorithms.meta_harness.refused import refused_diff
from flashrsi_dagster.algorithms.searching import Searching
from flashrsi_dagster.algorithms.turns import one_step_at_a_time, side_by_side, turn
from flashrsi_dagster.contamination import ContentVerdict
from flashrsi_dagster.decisions import Decision
from flashrsi_dagster.decisions.adoption import Refusal, first_admitted, refusal
from flashrsi_dagster.environments.jail import Mount
from flashrsi_dagster.experiment.keys import candidate_key
from flashrsi_dagster.records import Status, Trajectory, Usage, read_optional
from flashrsi_dagster.rollouts.engine import (
    final_trajectories,
)
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.rollouts.scores import scores_frame
from flashrsi_dagster.scratch import scratch_dir
from flashrsi_dagster.snapshots import EditOutcome, Snapshot


def _aborted(state: State) -> bool:
    return any(r.aborts for r in state.rounds)


def _free(path: Path, label: str) -> Path:
    """`<stem>.<label><suffix>` beside `path`, numbered `-2`, `-3`… if taken (a candidate
    evaluated again twice within a second): an archived record is never replaced."""
    archived, n = path.with_name(f"{path.stem}.{label}{path.suffix}"), 1
    while archived.exists():
        n += 1
        archived = path.with_name(f"{path.stem}.{label}-{n}{path.suffix}")
    return archived


def _candidate(_harness: MetaHarness, k: int, slot: str = SLOT, *_: object, **__: object) -> str:
    """The lock of a candidate step's own candidate (`r003.c1`)."""
    return candidate_key(k, slot)


class MetaHarness(Searching):
    """Meta-Harness on the algorithm seam. Opening it is cheap (planning reads records only);
    the benchmark and the dev split are loaded by the first step that needs them, and the
    test split only by the sealed test."""

    name: ClassVar[str] = "meta_harness"
    SEARCH_SPLITS = ("dev",)

    @cached_property
    def max_steps(self) -> int:
        return self.config.max_steps

    @cached_property
    def candidates(self) -> int:
        return self.config.candidates_per_round

    @cached_property
    def layout(self) -> Layout:
        return Layout.of(self.experiment.paths.records)

    @cached_property
    def history(self) -> HistoryView:
        """Slot c0's history view (each slot has its own: `view`)."""
        return HistoryView.for_experiment(self.experiment.snapshots, self.layout)

    @cached_property
    def seeds(self) -> tuple[str, ...]:
        """Round 0's slots: the target's own harness (c0), then `initial_harnesses`."""
        return slots_of(1 + len(self.config.initial_harnesses))

    def proposals(self) -> tuple[str, ...]:
        """The candidate slots of each round after the seed round's."""
        return slots_of(self.candidates)

    def slots(self) -> tuple[str, ...]:
        """Every slot any round has (the seed round's may be more than a later one's)."""
        return max(self.seeds, self.proposals(), key=len)

    def view(self, slot: str = SLOT) -> HistoryView:
        """The history view the Worker of candidate `slot` reads."""
        if slot == SLOT:
            return self.history
        return HistoryView.for_experiment(self.experiment.snapshots, self.layout, slot)

    def discard_history(self) -> None:
        """Every slot's history view (the search is over, or left)."""
        for slot in self.proposals():
            self.view(slot).discard()

    def rounds(self) -> int:
        return self.max_steps + 1

    def round_slots(self) -> tuple[tuple[int, str], ...]:
        return tuple(grid(self.max_steps, self.proposals(), self.seeds))

    # -- state ----------------------------------------------------------------------------

    def read_state(self) -> State:
        return read_state(self.layout, self.max_steps, self.proposals(), self.seeds)

    def next_step(self, state: State) -> Step:
        return next_step(state, *self._shape(), frontier=self.config.sealed_test_frontier)

    def ready_steps(self, state: State) -> tuple[Step, ...]:
        """The next step; with it, every candidate of its round that has no result yet."""
        return ready_steps(state, *self._shape(), frontier=self.config.sealed_test_frontier)

    def _shape(self) -> tuple[int, tuple[str, ...], tuple[str, ...]]:
        return self.max_steps, self.proposals(), self.seeds

    def step_line(self, state: State, step: Step) -> str:
        return report.step_line(state, step)

    def summary(self, state: State) -> list[str]:
        return report.summary(state)

    def decisions(self, state: State) -> list[Decision]:
        """The ledger entries the records imply (see `meta_harness/ledger_entries.py`)."""
        return ledger_entries.decisions(self, state)

    def _require_turn(self, action: str) -> State:
        """The state, if `action` may run now; else StepOrderError, nothing changed."""
        state = self.read_state()
        missing = still_missing(state, self.max_steps, action, self.proposals(), self.seeds)
        if missing is not None:
            what = {"promote": "promotion", "sealed_test": "the sealed test"}[action]
            raise StepOrderError(f"{what} refused: {missing}")
        return state

    def do(self, step: Step) -> None:
        actions = {
            "evaluate_seed": lambda: self.evaluate_seed(step.slot or SLOT),
            "propose": lambda: self.propose(step.round or 0, step.slot or SLOT),
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

    def initial(self, slot: str = SLOT) -> Snapshot:
        """Round 0's harness in `slot`: the seed (c0), else the `initial_harnesses` folder
        made into a root snapshot once (then always that one, as the seed). It waits for
        the seed's evaluation: the seed is the experiment's first root snapshot."""
        if slot == SLOT:
            return self.seed()
        if read_optional(self.layout.round(0), RoundRecord) is None:
            raise StepOrderError(f"{candidate_name(0, slot)} refused: the seed is evaluated first")
        evaluated = read_optional(self.layout.round(0, slot), RoundRecord)
        if evaluated is not None and evaluated.snapshot_id:
            return self.experiment.snapshots.get(evaluated.snapshot_id)
        folder = self.config.initial_harnesses[slot_number(slot) - 1]
        components = harness_components(self.experiment.config.agent, folder)
        metadata = {"round": 0, "slot": slot, "initial_harness": str(folder)}
        return self.experiment.snapshots.create_seed(folder, components, metadata=metadata)

    def evaluate_seed(self, slot: str = SLOT) -> RoundRecord:
        """Round 0: an initial harness (the seed, by default the only one) on dev."""
        return self.evaluate_round(0, slot)

    def round_rollouts(self, k: int, slot: str = SLOT) -> list[Trajectory]:
        """The final rollout of every dev task of a candidate (none for a rejected one)."""
        record = RolloutRecord(self.layout.rollouts(k, slot))
        return final_trajectories(record, self.settings.max_infra_reruns)

    def round_frame(self, k: int, slot: str = SLOT) -> pd.DataFrame:
        """The scores table of a candidate's dev evaluation (empty for a rejected one)."""
        return scores_frame(self.round_rollouts(k, slot))

    @side_by_side(_candidate)
    def propose(self, k: int, slot: str = SLOT) -> RoundRecord:
        """Candidate (k, slot) whole: the Worker's edit, then its evaluation (or rejection)."""
        self.edit(k, slot)
        return self.finish_round(k, slot)

    @side_by_side(_candidate)
    def edit(self, k: int, slot: str = SLOT) -> EditRecord:
        """The Worker's edit of candidate (k, slot) (read back if it was already made). A new
        edit waits for every candidate of the earlier rounds: its history must be complete."""
        made = read_optional(self.layout.edit(k, slot), EditRecord)
        if made is not None:
            return made
        state = self.read_state()
        refused = self._edit_refused(state, k, slot)
        if refused is not None:
            self._drop_view_if_aborted(slot)
            name = candidate_name(k, slot)
            raise StepOrderError(f"the Worker's edit of {name} refused: {refused}")
        return self._edit(state, k, slot)

    def _edit_refused(self, state: State, k: int, slot: str) -> str | None:
        missing = unfinished_rounds(state, range(k), self.proposals(), self.seeds)
        if missing:
            return f"round(s) {', '.join(map(str, missing))} have no result yet"
        if state.test is not None:
            return "the search is over (the sealed test has run)"
        if not 1 <= k <= self.max_steps:
            return f"rounds are 1..{self.max_steps}"
        if slot not in self.proposals():
            return f"a round's slots are {', '.join(self.proposals())} (candidates_per_round)"
        if _aborted(state):
            return "the search was aborted (a Worker failed)"
        return None

    def finish_round(self, k: int, slot: str = SLOT) -> RoundRecord:
        """Evaluate candidate (k, slot)'s committed edit on dev, or record its rejection.
        Its turn is a `with`, not `side_by_side`: it lies between `evaluate_round` and the
        rollouts, a path kept short (tests/algorithms/meta_harness/defs/test_asset_to_rollout)."""
        with turn(self, "finish_round", beside=candidate_key(k, slot)):
            edit = read_optional(self.layout.edit(k, slot), EditRecord)
            assert edit is not None, f"{candidate_name(k, slot)} has no edit yet"
            done = read_optional(self.layout.round(k, slot), RoundRecord)
            reason = edit.reason
            if edit.status == "committed" and edit.snapshot_id:
                snapshot = self.experiment.snapshots.get(edit.snapshot_id)
                verdict = self._content(k, slot, snapshot, done)
                if verdict is None or not verdict.contaminated:
                    evaluated = self._evaluate(k, snapshot, edit.parent_id, slot, edit.produced_by)
                    self._drop_view_if_aborted(slot)
                    return evaluated
                reason = f"content check: {verdict.reason}"
            if done is not None and done.status != "evaluated":
                self.record_decisions()  # read back: a crash may have come before its entry
                return done
            status = "worker_failed" if edit.status == "worker_failed" else "rejected"
            # A rejected candidate's snapshot stays out of the round record: the history shows
            # the Worker every recorded snapshot, and a contaminated one is not to be shown.
            record = RoundRecord(
                round=k,
                slot=slot,
                status=status,
                parent_id=edit.parent_id,
                produced_by=edit.produced_by,
                reason=reason,
            )
            record = self.write(self.layout.round(k, slot), record)
            self._drop_view_if_aborted(slot)
            self.record_decisions()
            self.log(f"{candidate_name(k, slot)}: {status} — {record.reason}")
            return record

    @side_by_side(_candidate)
    def content(self, k: int, slot: str = SLOT) -> ContentVerdict | None:
        """Candidate (k, slot)'s contamination verdict, made now if its edit is committed
        and it has none yet (its evaluation reads it back); None: nothing to check (the seed,
        an edit that committed nothing, a candidate evaluated before the check existed)."""
        edit = read_optional(self.layout.edit(k, slot), EditRecord)
        if k == 0 or edit is None or edit.status != "committed" or not edit.snapshot_id:
            return None
        done = read_optional(self.layout.round(k, slot), RoundRecord)
        return self._content(k, slot, self.experiment.snapshots.get(edit.snapshot_id), done)

    def _content(self, k: int, slot: str, snapshot: Snapshot, done: RoundRecord | None):
        """The candidate's contamination verdict, made before it is scored; None for one
        evaluated already (read back as it was: records are never rewritten)."""
        if done is not None and done.status == "evaluated" and done.snapshot_id == snapshot.id:
            return None
        return self.check_content(snapshot, self.layout.content(k, slot))

    def _drop_view_if_aborted(self, slot: str) -> None:
        """An aborted search needs no history view of `slot` again. Only this slot's:
        another candidate of the round may still be reading its own (it drops it when it
        ends, or when its edit is refused)."""
        if _aborted(self.read_state()):
            self.view(slot).discard()

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
        chosen, refused = first_admitted(ranking, lambda row: self._vet(state, row[1]))
        best_round, best_id, best_score = chosen
        best = state.candidate_of(best_id)
        slot = best.slot if best else SLOT
        promotion = Promotion(
            snapshot_id=best_id,
            round=best_round,
            slot=slot,
            dev_score=best_score,
            ranking=ranking,
            frontier=[(p.round, p.slot, p.snapshot_id) for p in frontier(state.rounds)],
            refused=refused,
        )
        self.write(self.layout.promotion, promotion)
        self.record_decisions()
        self.discard_history()  # the search is over: no Worker step will need it again
        name = candidate_name(best_round, slot)
        self.log(f"promoted {name} ({best_id[:12]}), dev score {best_score:.3f}")
        return promotion

    def _vet(self, state: State, snapshot_id: str) -> Refusal | None:
        """The host's vetting of the ranked candidate's adoption against the seed, on the same
        dev tasks (`decisions.adoption`); the seed itself is the baseline."""
        candidate, seed = state.candidate_of(snapshot_id), state.round(0)
        if candidate is None or seed is None or candidate.snapshot_id == seed.snapshot_id:
            return None  # another initial harness is vetted as any candidate
        baseline = self.round_rollouts(0)
        return refusal(
            self.experiment.config.comparison,
            ledger_entries.ref(candidate),
            self.round_rollouts(candidate.round, candidate.slot),
            baseline,
            eval_set=ledger_entries.seed_eval_set(seed, baseline),
        )

    def evaluate_round(self, k: int, slot: str = SLOT, *, again: bool = False) -> RoundRecord:
        """A candidate's evaluation, read back if it was made; `again`: from scratch, as a
        rematerialization of the round asks (see `restart_round`). The seed's is a
        sequential step; a later round's candidate's runs beside its round's others, but
        its evaluation again is sequential: it moves records that the later rounds'
        candidates read (their Workers' history, their order check)."""
        beside = None if k == 0 or again else candidate_key(k, slot)
        with turn(self, "evaluate_round", beside=beside):
            if k == 0:
                if again:
                    self.restart_round(0, slot)
                return self._evaluate_initial(slot)
            if read_optional(self.layout.edit(k, slot), EditRecord) is None:
                refused = self._edit_refused(self.read_state(), k, slot) or (
                    "its Worker's edit is not made yet (its snapshot comes first)"
                )
                name = candidate_name(k, slot)
                raise StepOrderError(f"the evaluation of {name} refused: {refused}")
            if again:
                self.restart_round(k, slot)
            return self.finish_round(k, slot)

    def _evaluate_initial(self, slot: str) -> RoundRecord:
        """Round 0's harness in `slot` on dev. Another initial harness waits for the seed's
        record (the seed is the experiment's first root snapshot); one that captures the same
        files as an earlier initial harness is rejected unevaluated (one snapshot, one
        candidate)."""
        if slot not in self.seeds:
            raise StepOrderError(
                f"the evaluation of {candidate_name(0, slot)} refused: round 0's slots are "
                f"{', '.join(self.seeds)} (the seed, then initial_harnesses)"
            )
        snapshot = self.initial(slot)
        done = read_optional(self.layout.round(0, slot), RoundRecord)
        if done is not None and done.status != "evaluated":
            return done
        state = self.read_state()
        twin = next(
            (
                r
                for r in state.rounds
                if r.round == 0 and r.slot != slot and r.snapshot_id == snapshot.id
            ),
            None,
        )
        if twin is None:
            return self._evaluate(0, snapshot, parent_id=None, slot=slot)
        reason = f"the same harness as {candidate_name(0, twin.slot)}"
        record = self.write(
            self.layout.round(0, slot),
            RoundRecord(round=0, slot=slot, status="rejected", reason=reason),
        )
        self.record_decisions()
        self.log(f"{candidate_name(0, slot)}: rejected — {reason}")
        return record

    def restart_round(self, k: int, slot: str = SLOT) -> None:
        """Evaluate a candidate again from scratch (a rematerialization): the same snapshot,
        new rollouts; the old record is kept beside, renamed, and no new snapshot is made."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        for path in (self.layout.rollouts(k, slot), self.layout.round(k, slot)):
            if path.exists():
                self.experiment.records.move(path, _free(path, f"replaced-{stamp}"))

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
        else:
            done = self.test_once(
                promotion.snapshot_id, self.layout.test_rollouts, self.layout.test
            )
        if self.config.sealed_test_frontier:
            self._test_frontier()
        return done

    def _test_frontier(self) -> None:
        """Every other member of the frontier the promotion froze, sealed-tested once each
        after the promoted snapshot (`sealed_test_frontier`, the reference's practice): each
        result is written once and read back (a resumed step tests only those it lacks, and
        picks up a member's cut-off rollouts where they stopped). Nothing reads these results
        to choose: the promotion is already frozen, and the history has none of them."""
        for k, slot, snapshot_id in self.read_state().untested_frontier():
            self.log(f"sealed test of {candidate_name(k, slot)}: on the frontier, not promoted")
            self.test_once(
                snapshot_id,
                self.layout.frontier_test_rollouts(k, slot),
                self.layout.frontier_test(k, slot),
                tested_as="frontier",
            )

    # -- parts ----------------------------------------------------------------------------

    def _evaluate(
        self,
        k: int,
        snapshot: Snapshot,
        parent_id: str | None,
        slot: str = SLOT,
        produced_by: str | None = None,
    ) -> RoundRecord:
        done = read_optional(self.layout.round(k, slot), RoundRecord)
        if done is not None and done.status == "evaluated" and done.snapshot_id == snapshot.id:
            return done  # a run done again (re-executed, resumed after its last write)
        version = self.evaluator.before("dev", self.splits.dev)
        score = self.score(snapshot, self.splits.dev, self.layout.rollouts(k, slot), "dev")
        usage = sum((t.usage for t in self.round_rollouts(k, slot)), Usage())
        can_edit = None
        if self.config.adopted_improver():  # it may be the improver of later rounds
            can_edit = self.can_edit(snapshot.id, self.layout.editing(k, slot))
        record = RoundRecord(
            can_edit=can_edit,
            eval_set=version.label,
            round=k,
            slot=slot,
            status="evaluated",
            snapshot_id=snapshot.id,
            parent_id=parent_id,
            produced_by=produced_by,
            dev_score=score,
            dev_tasks=len(self.splits.dev),
            dev_input_tokens=usage.input_tokens,
            dev_output_tokens=usage.output_tokens,
        )
        self.write(self.layout.round(k, slot), record)
        name = candidate_name(k, slot)
        self.log(f"{name}: {snapshot.short_id} dev score {score:.3f} on {version.label}")
        return record

    def _edit(self, state: State, k: int, slot: str) -> EditRecord:
        if self.config.proposer == "coordinated":
            return self._coordinated_edit(state, k, slot)
        store = self.experiment.snapshots
        seed, start = self._start(state)
        with scratch_dir("edit-") as tmp:
            edit_dir = store.check_out(seed, tmp / "edit")
            files = [p.relative_to(edit_dir).as_posix() for p in edit_dir.rglob("*") if p.is_file()]
            instruction = worker_instruction(
                seed.components,
                HISTORY,
                seed.components.prompt_file(files),
                slot=slot,
                candidates=self.candidates,
                start=start,
            )
            produced_by = improver_of(state, k) if self.config.adopted_improver() else None
            if produced_by is not None:
                instruction += improver_note(store.get(produced_by))
            trajectory = self._worker_step(k, edit_dir, instruction, slot, produced_by)
            self.write(self.layout.worker(k, slot), trajectory)
            edit = self._commit(k, slot, seed, edit_dir, trajectory, produced_by)
            store.forget_checkout(edit_dir)
        return self.write(self.layout.edit(k, slot), edit)

    def _start(self, state: State) -> tuple[Snapshot, str]:
        """The snapshot every candidate is written in (`start_of`: the seed, or the best
        initial harness on dev), and what the Worker's instruction calls it."""
        start = start_of(state)
        slot = next((r.slot for r in state.rounds if r.round == 0 and r.snapshot_id == start), SLOT)
        return self.experiment.snapshots.get(start), start_words(slot, start, HISTORY)

    def _coordinated_edit(self, state: State, k: int, slot: str) -> EditRecord:
        """Candidate (k, slot)'s edit under `proposer: coordinated`: the round's one Worker
        session, run by whichever candidate comes first (the others wait on the round's
        session lock, then read their edit back)."""
        waiting = lambda: self.log(f"round {k}: waiting for its Worker session")  # noqa: E731
        with self.experiment.lock(f"{candidate_key(k, SLOT)}.session").held(waiting):
            made = read_optional(self.layout.edit(k, slot), EditRecord)
            if made is not None:
                return made
            return self._session(state, k)[slot]

    def _session(self, state: State, k: int) -> dict[str, EditRecord]:
        """One Worker session writes every candidate of round k, one folder each (a fresh
        seed checkout); each folder is committed on its own, a twin of a sibling rejected."""
        store = self.experiment.snapshots
        seed, start = self._start(state)
        edits: dict[str, EditRecord] = {}
        with scratch_dir("edit-") as tmp:
            folders = {s: store.check_out(seed, tmp / "edit" / s) for s in self.slots()}
            first = folders[SLOT]
            files = [p.relative_to(first).as_posix() for p in first.rglob("*") if p.is_file()]
            instruction = worker_instruction(
                seed.components,
                HISTORY,
                seed.components.prompt_file(files),
                candidates=self.candidates,
                coordinated=True,
                start=start,
            )
            produced_by = improver_of(state, k) if self.config.adopted_improver() else None
            if produced_by is not None:
                instruction += improver_note(store.get(produced_by))
            trajectory = self._worker_step(k, tmp / "edit", instruction, SLOT, produced_by)
            seen: dict[str, str] = {}
            for s, folder in folders.items():
                self.write(self.layout.worker(k, s), trajectory)
                edits[s] = self.write(
                    self.layout.edit(k, s),
                    self._session_edit(k, s, seed, folder, trajectory, produced_by, seen),
                )
                store.forget_checkout(folder)
        return edits

    def _session_edit(
        self,
        k: int,
        slot: str,
        seed: Snapshot,
        folder: Path,
        trajectory: Trajectory,
        produced_by: str | None,
        seen: dict[str, str],
    ) -> EditRecord:
        """One folder of a coordinated session made a candidate: refused if the Worker
        replaced the folder, rejected unevaluated if a sibling's twin, else committed."""
        refused = dict(round=k, slot=slot, parent_id=seed.id, produced_by=produced_by)
        if trajectory.status == Status.SUCCESS:
            problem = folder_problem(folder)
            if problem is not None:
                return EditRecord(**refused, status="refused", reason=problem)
            twin = seen.setdefault(folder_digest(folder), slot)
            if twin != slot:
                return EditRecord(**refused, status="noop", reason=twin_reason(twin))
        return self._commit(k, slot, seed, folder, trajectory, produced_by)

    def _worker_step(
        self, k: int, edit_dir: Path, instruction: str, slot: str, produced_by: str | None
    ) -> Trajectory:
        """The Worker's run with its slot's history view at `.history` (read-only in its
        jail, a copy when unconfined), showing the rounds before k only: what every
        candidate of round k sees. The improver is the Worker role's harness, or the adopted
        one (`produced_by`)."""
        worker, view = self.improver(produced_by), self.view(slot)
        earlier = [r for r in self.read_state().rounds if r.round < k]
        tree = view.update(earlier)
        return worker.edit(
            edit_dir,
            instruction,
            task_id=f"worker-{k}" if slot == SLOT else f"worker-{k}-{slot}",
            mounts=(Mount(tree, edit_dir / HISTORY),),
        )

    def _commit(
        self,
        k: int,
        slot: str,
        seed: Snapshot,
        edit_dir: Path,
        worker: Trajectory,
        produced_by: str | None,
    ) -> EditRecord:
        if worker.status != Status.SUCCESS:
            detail = worker.error.message if worker.error else "no error recorded"
            reason = f"the Worker failed ({worker.status}): {detail}"
            return EditRecord(
                round=k,
                slot=slot,
                status="worker_failed",
                parent_id=seed.id,
                produced_by=produced_by,
                reason=reason,
            )
        message = f"meta-harness step {k}" + ("" if slot == SLOT else f", {slot}")
        metadata = {"round": k, "slot": slot, "produced_by": produced_by}
        outcome = self.experiment.snapshots.commit_child(
            seed, edit_dir, message=message, metadata=metadata
        )
        return EditRecord(
            round=k,
            slot=slot,
            status=outcome.status,
            parent_id=seed.id,
            produced_by=produced_by,
            reason=outcome.reason,
            snapshot_id=outcome.snapshot.id if outcome.snapshot else None,
            changed=[f"{c.status} {c.path}" for c in outcome.changed],
            refused_diff=self._refused_diff(seed, edit_dir, outcome)
            if outcome.status == "refused"
            else None,
        )

    def _refused_diff(self, seed: Snapshot, edit_dir: Path, outcome: EditOutcome) -> str:
        """The refused edit's code against a fresh checkout of the seed (`refused.py`)."""
        store = self.experiment.snapshots
        with scratch_dir("refused-") as tmp:
            seed_dir = store.check_out(seed, tmp / "seed")
            try:
                return refused_diff(seed_dir, edit_dir, outcome.refusals)
            finally:
                store.forget_checkout(seed_dir)
