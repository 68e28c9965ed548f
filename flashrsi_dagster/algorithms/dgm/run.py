"""DGM (seed 003, the Darwin Gödel Machine) on the algorithm seam.

Generation 0 admits the seed: it must load and pass the editing check, then it is scored on
train in stages. Each later generation draws `children_per_generation` parents from the
archive (`selection.py`, the paper's sigmoid(score) x 1/(1 + children) by default) and gives
each an entry: one of its failed train tasks, or a special entry about itself. The parent's
own harness (`Searching.improver`, on the target's adapter with the Worker role's model and
caps) edits a copy of itself, its train logs mounted read-only at `.history`; the host
commits the child, checks that it loads, checks its content for contamination, runs the
editing check with the child's own harness, and only then scores it: the first train stage,
the rest of train if it reaches the threshold. A child that loads and can edit is admitted
whatever its score. At the end the admitted members are evaluated on dev, ranked, and the
best (`test_top_k` of them) take the sealed test, each once. Steps run one at a time.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import ClassVar

from flashrsi_dagster.algorithms.base import ONLY_SLOT, Step, StepOrderError
from flashrsi_dagster.algorithms.dgm import ledger_entries, report
from flashrsi_dagster.algorithms.dgm.admission import load_problems, write_logs
from flashrsi_dagster.algorithms.dgm.plan import (
    State,
    choice,
    dev_candidates,
    grid,
    next_step,
    rank,
    read_state,
    slots_of,
    still_missing,
)
from flashrsi_dagster.algorithms.dgm.prompts import instruction
from flashrsi_dagster.algorithms.dgm.records import (
    CandidateRecord,
    DevRecord,
    Layout,
    Promotion,
    TestResult,
)
from flashrsi_dagster.algorithms.editing_check.check import EditingVerdict
from flashrsi_dagster.algorithms.searching import Searching
from flashrsi_dagster.algorithms.turns import one_step_at_a_time
from flashrsi_dagster.decisions import Decision, Ref
from flashrsi_dagster.decisions.adoption import Refusal, first_admitted, refusal
from flashrsi_dagster.environments.jail import Mount
from flashrsi_dagster.records import Status, Trajectory, read_optional
from flashrsi_dagster.rollouts.engine import final_trajectories
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.scratch import scratch_dir
from flashrsi_dagster.snapshots import Snapshot
from flashrsi_dagster.snapshots.guard import HISTORY_DIR


class Dgm(Searching):
    name: ClassVar[str] = "dgm"
    SEARCH_SPLITS = ("train", "dev")

    @cached_property
    def layout(self) -> Layout:
        return Layout(self.experiment.paths.records)

    def slots(self) -> tuple[str, ...]:
        return slots_of(self.config.children_per_generation)

    def rounds(self) -> int:
        return self.config.generations + 1

    def round_slots(self) -> tuple[tuple[int, str], ...]:
        return tuple(grid(self.config))  # generation 0: the seed alone

    def read_state(self) -> State:
        return read_state(self.layout, self.config)

    def next_step(self, state: State) -> Step:
        return next_step(state, self.config)

    def step_line(self, state: State, step: Step) -> str:
        return report.step_line(state, step)

    def summary(self, state: State) -> list[str]:
        return report.summary(state)

    def decisions(self, state: State) -> list[Decision]:
        return ledger_entries.decisions(self, state)

    def do(self, step: Step) -> None:
        if step.action in ("evaluate_seed", "self_improve") and step.round is not None:
            self.candidate(step.round, step.slot or ONLY_SLOT)
        elif step.action == "promote":
            self.promote()
        elif step.action == "sealed_test":
            self.sealed_test()
        else:
            raise StepOrderError(f"nothing to do for {step.describe()}")

    def _turn(self, action: str) -> State:
        state = self.read_state()
        if (missing := still_missing(state, self.config, action)) is not None:
            raise StepOrderError(f"{action} refused: {missing}")
        return state

    # -- a candidate ------------------------------------------------------------------------

    @one_step_at_a_time
    def candidate(self, g: int, slot: str = ONLY_SLOT) -> CandidateRecord:
        """Generation g's candidate in `slot` (the seed at 0), read back once it has a
        result; made only on its turn."""
        state = self.read_state()
        if (done := state.candidate(g, slot)) is not None:
            return done
        step = next_step(state, self.config)
        if (step.round, step.slot) != (g, slot):
            raise StepOrderError(f"generation {g} {slot} refused: {step.describe()} first")
        if g == 0:
            seed = self.seed()
            record = self._admit(
                0,
                slot,
                seed,
                CandidateRecord(generation=0, slot=slot, status="admitted", snapshot_id=seed.id),
            )
        else:
            record = self._self_improve(state, g, slot)
        record = self.write(self.layout.candidate(g, slot), record)
        self.record_decisions()
        self.log(report.candidate_line(record))
        return record

    def _self_improve(self, state: State, g: int, slot: str) -> CandidateRecord:
        chosen = choice(state, self.config, self.experiment.config.experiment.seed, g, slot)
        parent = self.experiment.snapshots.get(chosen.parent.snapshot_id or "")
        produced_by = parent.id if self.config.self_improvement else None
        base = CandidateRecord(
            generation=g,
            slot=slot,
            status="noop",
            parent_id=parent.id,
            produced_by=produced_by,
            entry=chosen.entry,
        )
        child, reason = self._child(g, slot, parent, chosen.parent, chosen.entry)
        if child is None:
            failed = reason is not None and reason.startswith("the improver failed")
            status = "improver_failed" if failed else "noop" if reason is None else "refused"
            return base.model_copy(update={"status": status, "reasons": [reason or "no change"]})
        return self._admit(g, slot, child, base.model_copy(update={"snapshot_id": child.id}))

    def _child(
        self, g: int, slot: str, parent: Snapshot, record: CandidateRecord, entry: str
    ) -> tuple[Snapshot | None, str | None]:
        """The improver's edit of a copy of `parent`, committed as a child (the one a run
        that crashed before its record made, if any), or why there is none (None: no change)."""
        store = self.experiment.snapshots
        made = [
            s
            for s in store.history()
            if s.parent_id == parent.id and s.metadata.get("dgm") == f"{g}:{slot}"
        ]
        if made:
            return made[0], None
        improver = self.improver(parent.id if self.config.self_improvement else None)
        with scratch_dir("dgm-") as tmp:
            checkout = store.check_out(parent, tmp / "self")
            files = [p.relative_to(checkout).as_posix() for p in checkout.rglob("*") if p.is_file()]
            logs = write_logs(tmp / "logs", self._train_logs(record))
            text = instruction(entry, HISTORY_DIR, parent.components.prompt_file(files) or None)
            trajectory = improver.edit(
                checkout,
                text,
                task_id=f"dgm-{g}-{slot}",
                mounts=(Mount(logs, checkout / HISTORY_DIR),),
            )
            self.write(self.layout.improver(g, slot), trajectory)
            if trajectory.status != Status.SUCCESS:
                detail = trajectory.error.message if trajectory.error else "no error recorded"
                return None, f"the improver failed ({trajectory.status}): {detail}"
            outcome = store.commit_child(
                parent,
                checkout,
                message=f"dgm generation {g} {slot}",
                metadata={"round": g, "slot": slot, "dgm": f"{g}:{slot}"},
            )
            store.forget_checkout(checkout)
        if outcome.status == "committed":
            return outcome.snapshot, None
        return None, outcome.reason if outcome.status == "refused" else None

    def _train_logs(self, record: CandidateRecord) -> list[Trajectory]:
        """A member's own train rollouts, every stage it ran."""
        found: list[Trajectory] = []
        for stage in (1, 2):
            found += self._final(self.layout.train(record.generation, record.slot, stage))
        return found

    def _admit(self, g: int, slot: str, snapshot: Snapshot, base: CandidateRecord):
        """Loads? clean content? can still edit? Then scored in stages; else refused."""
        reasons = self._load_reasons(snapshot)
        if not reasons and g > 0:
            verdict = self.check_content(snapshot, self.layout.content(g, slot))
            if verdict.contaminated:
                reasons.append(f"content check: {verdict.reason}")
        editing = None
        if not reasons:
            editing = self._editing(g, slot, snapshot)
            if not editing.passed:
                reasons.append(f"lost its editing ability: {editing.reason}")
        base = base.model_copy(
            update={
                "compiled": not any(r.startswith("does not load") for r in reasons),
                "editing_passed": None if editing is None else editing.passed,
            }
        )
        if reasons:
            return base.model_copy(update={"status": "refused", "reasons": reasons})
        return self._staged(g, slot, snapshot, base.model_copy(update={"status": "admitted"}))

    def _load_reasons(self, snapshot: Snapshot) -> list[str]:
        with scratch_dir("dgm-load-") as tmp:
            checkout = self.experiment.snapshots.check_out(snapshot, tmp / "load")
            problems = load_problems(checkout)
            self.experiment.snapshots.forget_checkout(checkout)
        return [f"does not load: {p}" for p in problems]

    def _editing(self, g: int, slot: str, snapshot: Snapshot) -> EditingVerdict:
        return self.editing_verdict(snapshot.id, self.layout.editing(g, slot))

    def _staged(self, g: int, slot: str, snapshot: Snapshot, base: CandidateRecord):
        """The first train stage; the rest of train only at or above the threshold."""
        train, staged = self.splits.train, self.config.staged
        stages = [train[: staged.first_tasks], train[staged.first_tasks :]]
        version = self.evaluator.before("train", stages[0], drawn_from=train)
        scores, counts, failed = [], [], []
        for i, tasks in enumerate(stages, start=1):
            if not tasks or (i == 2 and scores[0] < staged.threshold):
                break
            path = self.layout.train(g, slot, i)
            scores.append(self.score(snapshot, tuple(tasks), path, "train"))
            counts.append(len(tasks))
            failed += [t.task_id for t in self._final(path) if (t.score or 0.0) < 1.0]
        total = sum(s * n for s, n in zip(scores, counts, strict=True)) / sum(counts)
        return base.model_copy(
            update={
                "stage_scores": scores,
                "stage_tasks": counts,
                "score": total,
                "failed_tasks": sorted(set(failed)),
                "eval_set": version.label,
            }
        )

    def _final(self, path: Path) -> list[Trajectory]:
        if not path.exists():
            return []
        return final_trajectories(RolloutRecord(path), self.settings.max_infra_reruns)

    def candidate_rollouts(self, g: int, slot: str) -> list[Trajectory]:
        """Every train rollout of a candidate (none for a refused one)."""
        return [
            *self._final(self.layout.train(g, slot, 1)),
            *self._final(self.layout.train(g, slot, 2)),
        ]

    # -- the end ----------------------------------------------------------------------------

    @one_step_at_a_time
    def promote(self) -> Promotion:
        """Admitted members on dev (the best by train first, `dev_candidates` of them), then
        the best by dev promoted (a tie keeps the earlier admission)."""
        state = self._turn("promote")
        if state.promotion is not None:
            return state.promotion
        self.experiment.records.verify()  # the ranking must rest on what was recorded
        version = self.evaluator.before("dev", self.splits.dev)
        for member in dev_candidates(state, self.config):
            g, slot = member.generation, member.slot
            if read_optional(self.layout.dev(g, slot), DevRecord) is not None:
                continue
            snapshot = self.experiment.snapshots.get(member.snapshot_id or "")
            score = self.score(snapshot, self.splits.dev, self.layout.dev_rollouts(g, slot), "dev")
            dev = DevRecord(
                generation=g,
                slot=slot,
                snapshot_id=snapshot.id,
                dev_score=score,
                dev_tasks=len(self.splits.dev),
                eval_set=version.label,
            )
            self.write(self.layout.dev(g, slot), dev)
        ranking = rank(self.read_state())
        (g, slot, best, score), refused = first_admitted(ranking, lambda row: self._vet(*row))
        promotion = self.write(
            self.layout.promotion,
            Promotion(
                snapshot_id=best,
                generation=g,
                slot=slot,
                dev_score=score,
                ranking=ranking,
                refused=refused,
            ),
        )
        self.record_decisions()
        self.log(f"promoted generation {g} {slot} ({best[:12]}), dev score {score:.3f}")
        return promotion

    def _vet(self, g: int, slot: str, snapshot_id: str, _score: float) -> Refusal | None:
        """The host's vetting of a ranked member's adoption against the seed on dev
        (`decisions.adoption`); nothing to judge when the seed was not evaluated on dev."""
        seed = read_optional(self.layout.dev(0, ONLY_SLOT), DevRecord)
        if g == 0 or seed is None:
            return None
        return refusal(
            self.experiment.config.comparison,
            Ref(snapshot_id=snapshot_id, round=g, slot=slot),
            self.dev_rollouts(g, slot),
            self.dev_rollouts(0, ONLY_SLOT),
            eval_set=seed.eval_set or "dev",
        )

    def dev_rollouts(self, g: int, slot: str) -> list[Trajectory]:
        """A member's final dev rollouts."""
        record = RolloutRecord(self.layout.dev_rollouts(g, slot))
        return final_trajectories(record, self.settings.max_infra_reruns)

    @one_step_at_a_time
    def sealed_test(self) -> list[TestResult]:
        """The best by dev on the sealed test, then the next up to `test_top_k`, each once."""
        state = self._turn("sealed_test")
        self.experiment.records.verify()  # neither the promotion nor a result may be forged
        assert state.promotion is not None
        k = min(self.config.test_top_k, len(state.promotion.ranking))
        results = []
        for rank_ in range(1, k + 1):
            done = read_optional(self.layout.test(rank_), TestResult)
            snapshot_id = state.promotion.ranking[rank_ - 1][2]
            if done is None:
                done = self.test_once(
                    snapshot_id, self.layout.test_rollouts(rank_), self.layout.test(rank_)
                )
            if done.snapshot_id != snapshot_id:
                raise RuntimeError(
                    f"sealed test {rank_} was run on {done.snapshot_id[:12]}, "
                    f"not on {snapshot_id[:12]}; it is not run again"
                )
            results.append(done)
        self.record_decisions()
        return results
