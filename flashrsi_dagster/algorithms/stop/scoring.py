"""The host's scoring: STOP's utility and meta-utility, mapped onto this project's benchmark.

* A **downstream task** is a group of train tasks (`groups` of `group_size`, in the split's
  order). Its **solution** is the text of one target harness file (`solution_file`, the
  target's system prompt by default); the seed solution is the seed harness's.
* **utility**(solution) on a group = the benchmark's score of the target harness with that
  file replaced, on the group's tasks. The host commits the solution as a snapshot (a child
  of the target's seed), checks it for contamination, then evaluates it; the improver gets
  the number only.
* The **meta-utility** of an improver program on train = the mean, over the groups, of the
  utility of what it returns when run (jailed) on the group's seed solution with that
  group's utility and `budget` calls. Its **dev** meta-utility scores the same returned
  solutions on the dev split, its **test** one on the sealed test split (once, at the end):
  an improver only ever calls utilities of train tasks, so dev and test stay unseen by it.

Every solution and every improver is scored once per task set and read back after (the
records are the memo), so a program scored during a search is not run again to rank it.
An improver with a circumvention attempt is worth 0 to the improvers that ask (it gains
nothing), and is never kept or promoted; its own records keep what it scored.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.stop.code_scan import scan_code
from flashrsi_dagster.algorithms.stop.records import GroupRun, ImproverScore, SolutionScore
from flashrsi_dagster.algorithms.stop.sandbox import Job, run_improver
from flashrsi_dagster.benchmarks.base import Task
from flashrsi_dagster.scratch import scratch_dir
from flashrsi_dagster.snapshots import Snapshot

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.stop.run import Stop

IMPROVER_FILE = "improver.py"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def solution_description(group_size: int, labels: list[str] | None) -> str:
    named = f" (labels: {', '.join(labels)})" if labels else ""
    return (
        "utility(solution) is the score, from 0 to 1, of an agent whose system prompt is the "
        f"solution, on {group_size} held tasks of the benchmark{named}: the fraction it "
        "answers right. The tasks are the host's; only the score comes back."
    )


def meta_description(groups: int, budget: int) -> str:
    return (
        "utility(program) is the meta-utility of an improver program (Python defining "
        "improve(solution, utility, model, budget) -> solution): the mean, over "
        f"{groups} downstream tasks, of the utility of the solution it returns when run with "
        f"at most {budget} utility calls. A program that tries to get round its sandbox, its "
        "budget or its utility scores 0."
    )


class Scorer:
    """Scores solutions and improver programs for one opened STOP experiment."""

    def __init__(self, search: Stop) -> None:
        self.search = search
        self.layout, self.config = search.layout, search.config
        self._solutions: dict[str, Snapshot] = {}

    # -- downstream ------------------------------------------------------------------------

    def groups(self) -> list[tuple[Task, ...]]:
        train, size = self.search.splits.train, self.config.group_size
        return [tuple(train[g * size : (g + 1) * size]) for g in range(self.config.groups)]

    def seed_solution(self) -> str:
        store = self.search.experiment.snapshots
        return store.read_file_at(self.search.target_seed, self.config.solution_file).decode()

    def solution_score(
        self, text: str, task_set: str, tasks: tuple[Task, ...], split: str
    ) -> SolutionScore:
        """The solution's score on `tasks` (a group, dev or test), read back once made."""
        key = digest(text)
        path = self.layout.solution(key, task_set)
        done = self.search.read(path, SolutionScore)
        if done is not None:
            return done
        snapshot = self.solution_snapshot(text, key)
        verdict = self.search.check_content(snapshot, self.layout.solution_content(key))
        if verdict.contaminated:
            made = SolutionScore(
                digest=key,
                snapshot_id=snapshot.id,
                task_set=task_set,
                score=0.0,
                tasks=len(tasks),
                status="contaminated",
            )
            return self.search.write(path, made)
        whole = {"train": self.search.splits.train, "dev": tasks, "test": tasks}[split]
        version = (
            self.search.evaluator.before(split, tasks, drawn_from=whole)
            if split != "test"
            else self.search.evaluator.before_sealed_test(tasks)
        )
        score = self.search.score(
            snapshot, tasks, self.layout.solution_rollouts(key, task_set), split
        )
        made = SolutionScore(
            digest=key,
            snapshot_id=snapshot.id,
            task_set=task_set,
            score=score,
            tasks=len(tasks),
            eval_set=version.label,
        )
        return self.search.write(path, made)

    def solution_snapshot(self, text: str, key: str) -> Snapshot:
        """The target seed with its solution file replaced by `text`, committed once."""
        if key in self._solutions:
            return self._solutions[key]
        store, seed = self.search.experiment.snapshots, self.search.target_seed
        made = [s for s in store.history() if s.metadata.get("solution") == key]
        snapshot = (
            made[0]
            if made
            else self._commit(seed, self.config.solution_file, text, {"solution": key})
        )
        self._solutions[key] = snapshot
        return snapshot

    def _commit(self, parent: Snapshot, file: str, text: str, metadata: dict) -> Snapshot:
        store = self.search.experiment.snapshots
        with scratch_dir("stop-") as tmp:
            checkout = store.check_out(parent, tmp / "edit")
            (checkout / file).write_text(text)
            outcome = store.commit_child(
                parent, checkout, message=f"stop {file}", metadata=metadata
            )
            store.forget_checkout(checkout)
        if outcome.status == "noop":
            return parent
        if outcome.snapshot is None:
            raise ValueError(outcome.reason or "the snapshot store refused it")
        return outcome.snapshot

    # -- improvers -------------------------------------------------------------------------

    def improver_snapshot(self, code: str, parent: Snapshot) -> Snapshot:
        """`code` as an improver snapshot, a child of `parent` (or `parent` itself)."""
        store, key = self.search.experiment.snapshots, digest(code)
        if store.read_file_at(parent, IMPROVER_FILE).decode() == code:
            return parent
        made = [s for s in store.history() if s.metadata.get("improver") == key]
        return made[0] if made else self._commit(parent, IMPROVER_FILE, code, {"improver": key})

    def improver_score(self, code: str, parent: Snapshot) -> ImproverScore:
        """The program's train meta-utility, its runs and its attempts (read back once made):
        contamination-checked, read by the host, then run jailed on every group."""
        key = digest(code)
        done = self.search.read(self.layout.improver(key), ImproverScore)
        if done is not None:
            return done
        try:
            snapshot = self.improver_snapshot(code, parent)
        except ValueError as exc:
            made = ImproverScore(
                digest=key, snapshot_id=None, status="contaminated", reason=f"not committed: {exc}"
            )
            return self.search.write(self.layout.improver(key), made)
        verdict = self.search.check_content(snapshot, self.layout.improver_content(key))
        if verdict.contaminated:
            made = ImproverScore(
                digest=key,
                snapshot_id=snapshot.id,
                status="contaminated",
                reason=f"content check: {verdict.reason}",
            )
            return self.search.write(self.layout.improver(key), made)
        attempts = scan_code(code)
        runs = []
        for g, tasks in enumerate(self.groups()):
            run, seen = self.downstream_run(code, g, tasks)
            runs.append(run)
            attempts += seen
        meta = sum(r.utility for r in runs) / len(runs)
        made = ImproverScore(
            digest=key,
            snapshot_id=snapshot.id,
            status="scored",
            train_meta_utility=meta,
            groups=runs,
            attempts=attempts,
        )
        self.search.log(
            f"improver {key}: train meta-utility {meta:.3f}"
            + (f", {len(attempts)} circumvention attempt(s) flagged" if attempts else "")
        )
        return self.search.write(self.layout.improver(key), made)

    def downstream_run(self, code: str, g: int, tasks: tuple[Task, ...]):
        """The improver on group g's seed solution, with that group's utility."""

        def score(text: str) -> float:
            return self.solution_score(text, f"g{g}", tasks, "train").score

        labels = getattr(self.search.benchmark, "labels", None)
        job = Job(
            code,
            self.seed_solution(),
            self.config.budget,
            solution_description(len(tasks), labels),
            score,
            f"train group {g}",
        )
        outcome = run_improver(
            job, self.config.improver, self.search.experiment.confinement, self.config.model_calls
        )
        utility = score(outcome.solution) if outcome.solution is not None else 0.0
        solution_id = (
            self.solution_snapshot(outcome.solution, digest(outcome.solution)).id
            if outcome.solution is not None
            else None
        )
        run = GroupRun(
            group=g,
            solution_id=solution_id,
            utility=utility,
            utility_calls=outcome.utility_calls,
            model_calls=outcome.model_calls,
            error=outcome.error,
        )
        return run, outcome.attempts

    def meta_value(self, code: str, parent: Snapshot, tried: list[str]) -> float:
        """What the meta-utility answers an improver about `code`: its train meta-utility,
        0 for a program flagged or contaminated."""
        record = self.improver_score(code, parent)
        tried.append(record.digest)
        if record.status != "scored" or record.flagged:
            return 0.0
        return record.train_meta_utility

    def scored_on(
        self, record: ImproverScore, task_set: str, tasks: tuple[Task, ...], split: str
    ) -> float:
        """The improver's returned solutions scored on `tasks` (dev or test), their mean."""
        store = self.search.experiment.snapshots
        total = 0.0
        for run in record.groups:
            if run.solution_id is not None:
                text = store.read_file_at(run.solution_id, self.config.solution_file).decode()
                total += self.solution_score(text, task_set, tasks, split).score
        return total / max(1, len(record.groups))


def read_code(store, snapshot: Snapshot | str) -> str:
    return store.read_file_at(snapshot, IMPROVER_FILE).decode()
