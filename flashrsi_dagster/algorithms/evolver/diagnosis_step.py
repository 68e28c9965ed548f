"""A round's first step: the funnel's diagnosis and choice.

1. The last round's children are re-diagnosed against the parent they were made from (fixed,
   flipped, still failing); each flip is kept with a harm replay of the regressed run.
2. A new parent (promoted last round) is diagnosed once: its failing train tasks get their
   WHY; a kept parent is never diagnosed again (round 1 uses the cold start's map).
3. The model picks the WHYs (the formula is the fallback, its ranking always logged), cut to
   the budget; each WHY gets its anchor set from train; the QD archive adds recombinations.

A diagnosis that fails leaves the round `errored` (a plan without slots, its error named).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.evolver.anchor import select_anchor
from flashrsi_dagster.algorithms.evolver.archive import elites, recombinations
from flashrsi_dagster.algorithms.evolver.choose import Choice, choose_whys
from flashrsi_dagster.algorithms.evolver.diagnosis_call import DiagnosisFailed, diagnose_tasks
from flashrsi_dagster.algorithms.evolver.failure_map import (
    FailureMap,
    fold,
    harm_replay,
    outcomes,
)
from flashrsi_dagster.algorithms.evolver.history import why_history
from flashrsi_dagster.algorithms.evolver.plan import State, recombination_slots
from flashrsi_dagster.algorithms.evolver.prompts import pick_instruction
from flashrsi_dagster.algorithms.evolver.protocol import read_why_pick
from flashrsi_dagster.algorithms.evolver.records import RoundPlan
from flashrsi_dagster.algorithms.evolver.train_runs import transcript
from flashrsi_dagster.records import Status, Trajectory

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.evolver.nodes import Node
    from flashrsi_dagster.algorithms.evolver.run import Evolver


class DiagnoseStep:
    def __init__(self, evolver: Evolver, state: State, r: int) -> None:
        self.e, self.state, self.r = evolver, state, r
        parent = state.parent()
        assert parent is not None
        self.parent = parent

    def run(self) -> RoundPlan:
        e, r = self.e, self.r
        try:
            failure_map = self.rediagnose(e.failure_map(r))
        except DiagnosisFailed as exc:
            return self.plan(Choice((), "formula"), error=f"the diagnosis failed: {exc}")
        e.write(e.layout.failure_map(r), failure_map)
        return self.plan(self.choose(failure_map), failure_map=failure_map)

    # -- 1, 2: re-diagnosis ---------------------------------------------------------------

    def rediagnose(self, failure_map: FailureMap) -> FailureMap:
        last = self.state.round(self.r - 1)
        children = [n for n in last.nodes.values() if n.confirm_mean is not None] if last else []
        if children and last is not None and last.plan is not None:
            before = self.rates_of(last.plan.parent_id)
            moved = {n.id: outcomes(before, self.e.confirm_of(n).rates()) for n in children}  # type: ignore[union-attr]
            flips = [
                harm_replay(task, self.r - 1, n.snapshot_id or "", transcript(run))
                for n in children
                for task, outcome in moved[n.id].items()
                if outcome == "flipped" and (run := self.failed_run(n, task)) is not None
            ]
            failure_map = failure_map.with_children(moved, flips)
        if self.parent in failure_map.diagnosed_parents:
            return failure_map
        return self.diagnose_parent(
            failure_map, last.plan.parent_id if last and last.plan else None
        )

    def diagnose_parent(self, failure_map: FailureMap, previous: str | None) -> FailureMap:
        """The new parent's failing train tasks, diagnosed once, folded into the map."""
        node = self.parent_node()
        assert node is not None, "a parent other than vanilla is a promoted node"
        rates = self.rates_of(self.parent)
        failing = sorted(t for t, rate in rates.items() if rate < 1.0)
        runs = {t: run for t in failing if (run := self.failed_run(node, t)) is not None}
        diagnoses = diagnose_tasks(self.e, self.r, self.e.taxonomy(), runs)
        moved = outcomes(self.rates_of(previous), rates) if previous else {}
        return fold(failure_map, self.parent, self.r, diagnoses, moved)

    def parent_node(self) -> Node | None:
        return next(
            (n for n in self.e.nodes(self.state) if n.snapshot_id == self.parent and n.library),
            None,
        )

    def rates_of(self, snapshot_id: str) -> dict[str, float]:
        """Per train task, the rate over K of vanilla or of a confirmed node."""
        if snapshot_id == self.e.cold_start_record().vanilla_id:
            return self.e.vanilla().rates()
        node = next(
            n
            for n in self.e.nodes(self.state)
            if n.snapshot_id == snapshot_id and n.confirm_mean is not None
        )
        confirm = self.e.confirm_of(node)
        assert confirm is not None
        return confirm.rates()

    def failed_run(self, node: Node, task: str) -> Trajectory | None:
        path = self.e.layout.candidate(node.round, node.slot, "confirm.jsonl")
        runs = [t for t in self.e.recorded(path) if t.task_id == task and (t.score or 0) < 1]
        return min(runs, key=lambda t: t.attempt, default=None)

    # -- 3: the choice ---------------------------------------------------------------------

    def choose(self, failure_map: FailureMap) -> Choice:
        failing = {w: n for w, n in failure_map.failing_by_why().items() if n > 0}
        if not failing:
            return Choice((), "formula", (), "no failing train task is left to work on")
        history = why_history(self.e.nodes(self.state))
        limit = self.e.shape.budget.max_why_per_round
        call = self.e.ask(pick_instruction(failing, history, limit), self.r, "pick")
        answer = call.answer if call.status == Status.SUCCESS else None
        pick = read_why_pick(answer)
        return choose_whys(pick.whys if pick else None, failing, history, self.e.shape.budget)

    def plan(
        self, choice: Choice, *, failure_map: FailureMap | None = None, error: str | None = None
    ) -> RoundPlan:
        e, r = self.e, self.r
        per_why = e.shape.budget.candidates_per_why
        slots = [f"w{i}c{j}" for i in range(1, len(choice.whys) + 1) for j in range(1, per_why + 1)]
        anchor, recombine = {}, {}
        if failure_map is not None:
            anchor = {why: self.anchor(failure_map.tasks_of(why), why) for why in choice.whys}
            pairs = self.recombinations()
            for slot, (a, b) in zip(recombination_slots(len(pairs)), pairs, strict=True):
                recombine[slot] = [a.id, b.id]
                affinity = {*failure_map.tasks_of(a.why), *failure_map.tasks_of(b.why)}
                anchor[slot] = self.anchor(sorted(affinity), slot)
            slots += list(recombine)
        plan = RoundPlan(
            round=r,
            parent_id=self.parent,
            whys=list(choice.whys),
            source=choice.source,  # type: ignore[arg-type]
            shadow=list(choice.shadow),
            note=choice.note,
            slots=slots if error is None else [],
            anchor=anchor,
            recombine=recombine,
            error=error,
        )
        return e.write(e.layout.plan(r), plan)

    def recombinations(self) -> list[tuple[Node, Node]]:
        """Pairs of elites from different cells not tried before, the strongest first, of
        which at least one is not already in the parent (an elite that is the parent or its
        ancestor adds nothing: its change is there)."""
        contained = set(self.e.experiment.snapshots.lineage(self.parent))
        tried = {
            frozenset(pair)
            for rd in self.state.rounds
            if rd.plan is not None
            for pair in rd.plan.recombine.values()
        }
        pairs = recombinations(elites(self.e.nodes(self.state)), limit=1 << 16)
        fresh = [
            (a, b)
            for a, b in pairs
            if frozenset((a.id, b.id)) not in tried
            and not {a.snapshot_id, b.snapshot_id} <= contained
        ]
        return fresh[: self.e.shape.recombinations]

    def anchor(self, affinity: list[str], key: str) -> list[str]:
        e = self.e
        train = e.train_ids
        seed = f"{e.experiment.config.experiment.seed}:{self.r}:{key}"
        size = min(e.config.anchor_size, len(train))
        chosen = select_anchor(e.vanilla().rates(), affinity, train, size=size, seed=seed)
        return list(chosen.tasks)
