"""What every algorithm class does the same way on top of the seam (`base.Algorithm`): the
benchmark and the evaluator guard it builds once, its record writes, its ledger sync, the
next step, and the engine's own loop over the steps (as `evolve()` and tests run it; hosts
drive `do()` one step per run instead). A class using it has `experiment`, `builders`, `log`,
`config` (its algorithm section), `settings`, `progress`, the search's `splits` (train and dev,
test dropped as drawn; `SEARCH_SPLITS` names those it cannot do without) and the seam's
methods; it gets the seed snapshot, its agents by role and the evaluation of a snapshot on
tasks too."""

from __future__ import annotations

from contextlib import ExitStack
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from flashrsi_dagster.agents import Agent, harness_components, harness_dir
from flashrsi_dagster.algorithms.base import Log, Step, StepOrderError
from flashrsi_dagster.algorithms.builders import DEFAULT_BUILDERS, Builders
from flashrsi_dagster.algorithms.editing_check.check import EditingVerdict, editing_check
from flashrsi_dagster.algorithms.improver import improver_role
from flashrsi_dagster.benchmarks.base import Benchmark, Task
from flashrsi_dagster.benchmarks.loading import load_splits
from flashrsi_dagster.benchmarks.splits import Splits
from flashrsi_dagster.contamination import ContentCheck, ContentVerdict
from flashrsi_dagster.decisions.ledger import Ledger
from flashrsi_dagster.environments.attribution import work_for
from flashrsi_dagster.evaluator import Evaluator
from flashrsi_dagster.experiment import Experiment
from flashrsi_dagster.experiment.fork import fork_evaluator, fork_seed
from flashrsi_dagster.records import Trajectory, read_optional
from flashrsi_dagster.records.sealed_test import TestResult
from flashrsi_dagster.rollouts.engine import Progress, Settings, evaluate_snapshot
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.rollouts.scores import scores_frame, summary
from flashrsi_dagster.scratch import scratch_dir
from flashrsi_dagster.snapshots import Snapshot


class Searching:
    SEARCH_SPLITS: ClassVar[tuple[str, ...]] = ()
    """The splits the search cannot do without (`Splits.require`): train, dev, or both."""

    def __init__(
        self,
        experiment: Experiment,
        *,
        builders: Builders = DEFAULT_BUILDERS,
        log: Log = print,
        progress: Progress | None = None,
    ) -> None:
        self.experiment, self.builders = experiment, builders
        self.config: Any = experiment.config.algorithm
        """The algorithm's own config section (its parameters and roles)."""
        self.settings = Settings.of(experiment.config.benchmark)
        self.log, self.progress = log, progress

    def round_slots(self) -> tuple[tuple[int, str], ...]:
        """Every slot of every round, unless the algorithm says which are used
        (`Partitioned.round_slots`)."""
        rounds, slots = self.rounds(), self.slots()  # type: ignore[attr-defined]
        return tuple((k, slot) for k in range(rounds) for slot in slots)

    @cached_property
    def benchmark(self) -> Benchmark:
        return self.builders.benchmark(self.experiment.config.benchmark)

    @cached_property
    def splits(self) -> Splits:
        """Train and dev, for the search; the test tasks are dropped as soon as the splits
        are drawn (only `unseal_test` draws them again, on the sealed test's turn)."""
        splits = load_splits(self.experiment.config.benchmark, self.benchmark).without_test()
        for name in self.SEARCH_SPLITS:
            splits.require(name)
        return splits

    @cached_property
    def evaluator(self) -> Evaluator:
        """The evaluator guard asked before every evaluation (`evaluator.Evaluator`)."""
        return Evaluator(
            self.experiment.records,
            self.experiment.paths.records / "evaluator",
            self.experiment.config.benchmark,
            self.benchmark,
            inherits=fork_evaluator(self.experiment.config),
        )

    @cached_property
    def content_check(self) -> ContentCheck:
        """The contamination check of this experiment's candidates: the benchmark's whole
        pool (every split, and the evolution data) searched for, train and dev named."""
        splits = self.splits
        named = {t.id: "train" for t in splits.train} | {t.id: "dev" for t in splits.dev}
        pool = lambda: [*self.benchmark.tasks(), *splits.train, *splits.dev]  # noqa: E731
        kept = self.experiment.paths.cache / "contamination"
        return ContentCheck(self.benchmark, pool, named, log=self.log, kept=kept)

    def check_content(self, candidate: Snapshot, path: Path) -> ContentVerdict:
        """The candidate's contamination verdict, recorded at `path` (read back once made).
        Every candidate (never a seed) is judged before it is scored."""
        return self.content_check.verdict_of(self.experiment.snapshots, candidate, path, self.write)

    @cached_property
    def _agents(self) -> dict[str, Agent]:
        return {}

    def agent(self, role: str) -> Agent:
        """The role's agent, built once per opening: `target`, or a role of the algorithm's
        config (`worker`, `reviewer`) built by the builder of that name."""
        if role not in self._agents:
            config = self.experiment.config
            section = config.agent if role == "target" else getattr(self.config, role)
            build = getattr(self.builders, role)
            self._agents[role] = build(section, None, confinement=self.experiment.confinement)
        return self._agents[role]

    def improver(self, produced_by: str | None) -> Agent:
        """The agent that makes a candidate (`algorithms/improver.py`): the Worker role's own
        for None; else the target's adapter running snapshot `produced_by`'s harness, checked
        out for this opening, with the Worker role's model, caps and permissions."""
        if produced_by is None:
            return self.agent("worker")
        key = f"improver:{produced_by}"
        if key not in self._agents:
            store = self.experiment.snapshots
            folder = self._checkouts.enter_context(scratch_dir("improver-")) / "harness"
            store.check_out(produced_by, folder)
            self._checkouts.callback(store.forget_checkout, folder)
            role = improver_role(self.config.worker, self.experiment.config.agent)
            build = self.builders.worker
            self._agents[key] = build(role, folder, confinement=self.experiment.confinement)
        return self._agents[key]

    def can_edit(self, snapshot_id: str, path: Path) -> bool:
        """Whether `snapshot_id`'s harness, run as the improver, passes the editing check:
        an adopted harness that cannot edit is never given an improver's turn."""
        return self.editing_verdict(snapshot_id, path).passed

    def editing_verdict(self, snapshot_id: str, path: Path) -> EditingVerdict:
        """The editing check (`algorithms/editing_check`) of `snapshot_id`'s harness run as
        the improver, recorded at `path` once and then read back."""
        made = read_optional(path, EditingVerdict)
        if made is not None and made.snapshot_id == snapshot_id:
            return made
        agent = self.improver(snapshot_id)
        task_id = f"editing-check-{snapshot_id[:12]}"
        verdict = editing_check(agent, snapshot_id=snapshot_id, task_id=task_id, log=self.log)
        return self.write(path, verdict)

    @cached_property
    def _checkouts(self) -> ExitStack:
        """The adopted harnesses' checkouts, removed when the opening closes."""
        return ExitStack()

    def close(self) -> None:
        """Close the agents it built and remove their checkouts; a later step builds them
        again."""
        try:
            for agent in self._agents.values():
                agent.close()
        finally:
            self._agents.clear()
            self._checkouts.close()

    def seed(self) -> Snapshot:
        """The seed snapshot: the target's harness, made into a snapshot once."""
        store = self.experiment.snapshots
        if self.experiment.config.experiment.fork is not None:  # a candidate of another one
            return fork_seed(store, self.experiment.config)
        made = [s for s in store.history() if s.parent_id is None]
        if made:
            return made[0]
        agent = self.experiment.config.agent
        return store.create_seed(
            harness_dir(agent), harness_components(agent), metadata={"round": 0}
        )

    def tasks(self, ids) -> tuple[Task, ...]:
        """Train tasks by id, in the order given."""
        by_id = {t.id: t for t in self.splits.train}
        return tuple(by_id[i] for i in ids)

    def evaluate(
        self, snapshot: Snapshot, tasks: tuple[Task, ...], path: Path, attempts: int, split: str
    ) -> list[Trajectory]:
        """The final rollouts of `snapshot` on `tasks`, `attempts` each, recorded at `path`
        (resumed where a crash cut them off)."""
        return evaluate_snapshot(**self._rollouts(snapshot, tasks, path, attempts, split))

    def score(
        self,
        snapshot: Snapshot,
        tasks: tuple[Task, ...],
        path: Path,
        split: str,
        attempts: int | None = None,
    ) -> float:
        """The benchmark's score of `snapshot` on `tasks`, `attempts` runs each (default:
        the benchmark's `attempts`), over the fixed denominator tasks x attempts."""
        attempts = attempts or self.settings.attempts
        final = evaluate_snapshot(**self._rollouts(snapshot, tasks, path, attempts, split))
        return summary(scores_frame(final), len(tasks), attempts)["score"]

    def _rollouts(
        self, snapshot: Snapshot, tasks: tuple[Task, ...], path: Path, attempts: int, split: str
    ) -> dict[str, Any]:
        """`evaluate_snapshot`'s arguments for `evaluate` and `score`: each calls it itself,
        so that a step reaches its rollouts in as few calls as a reader follows."""
        settings = self.settings
        return {
            "store": self.experiment.snapshots,
            "snapshot": snapshot,
            "agent_for": lambda checkout: self.agent("target"),
            "benchmark": self.benchmark,
            "tasks": tasks,
            "record": RolloutRecord(path, self.experiment.records),
            "split": split,
            "settings": Settings(attempts, settings.concurrency, settings.max_infra_reruns),
            "progress": self.progress,
        }

    def unseal_test(self) -> tuple[Task, ...]:
        """The test split's tasks: the one path to them, for the finalize steps (the sealed
        test of the promoted snapshot, the Evolver's retention report), and open only on the
        sealed test's turn. Anything else asking is refused, and holds no test task."""
        due = self.next()
        if due.action != "sealed_test":
            raise StepOrderError(f"the test split stays sealed: {due.describe()} comes first")
        return load_splits(self.experiment.config.benchmark, self.benchmark).unseal_test()

    def test_once(
        self, snapshot_id: str, rollouts: Path, result: Path, tested_as: str = "promoted"
    ) -> TestResult:
        """The sealed test of the promoted snapshot (or, `tested_as="frontier"`, of another
        Meta-Harness frontier member): the test split drawn now, the evaluator shown to be the
        recorded one, the score written once (`result`)."""
        tasks = self.unseal_test()
        snapshot = self.experiment.snapshots.get(snapshot_id)
        version = self.evaluator.before_sealed_test(tasks)
        score = self.score(snapshot, tasks, rollouts, "test")
        record = TestResult(
            snapshot_id=snapshot.id,
            test_score=score,
            test_tasks=len(tasks),
            eval_set=version.label,
            tested_as=tested_as,
        )
        self.write(result, record)
        self.log(f"sealed test of {snapshot.short_id}: {score:.3f} over {len(tasks)} tasks")
        return record

    def write[R](self, path: Path, record: R) -> R:
        """Write a record; returns the stored (redacted) copy, the one to show or log."""
        return self.experiment.records.write(path, record)  # type: ignore[type-var]

    def next(self) -> Step:
        return self.next_step(self.read_state())  # type: ignore[attr-defined]

    def ready_steps(self, state: Any) -> tuple[Step, ...]:
        """One step at a time, unless the algorithm lets a round's candidates run side by
        side (see `base.Algorithm.ready_steps`)."""
        return (self.next_step(state),)  # type: ignore[attr-defined]

    def record_decisions(self) -> None:
        """Append to the ledger what the records decided and it does not hold yet."""
        Ledger.of(self.experiment).sync(self.decisions(self.read_state()))  # type: ignore[attr-defined]

    def run(self, *, until: str | None = None) -> Any:
        """Every remaining step, in order (stopping before the first `until` step, if given);
        safe to call again after a crash (a folder whose records fail the integrity check is
        refused, naming the files). Returns the state at the end."""
        self.experiment.records.verify()
        try:
            while not (step := self.next()).finished and step.action != until:
                work_for(step.candidate)  # the step's model calls are its candidate's
                self.do(step)  # type: ignore[attr-defined]
        finally:
            self.close()
        return self.read_state()  # type: ignore[attr-defined]
