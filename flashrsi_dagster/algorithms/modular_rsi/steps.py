"""The bodies of ModularRSI's two kinds of step: a branch step and an integration round.

Both end in a `StepRecord`. A Worker failure and a protocol error (an analysis or a review
that does not answer as `protocol.py` says, still after `answer_retries` fresh runs told the
parse error) raise `Abort` and end the experiment with every record so far kept; a rejected
candidate only keeps the previous version.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from flashrsi_dagster.algorithms.improver import improver_note
from flashrsi_dagster.algorithms.modular_rsi import gates, prompts
from flashrsi_dagster.algorithms.modular_rsi.findings import rank_targets
from flashrsi_dagster.algorithms.modular_rsi.groups import group_rollouts
from flashrsi_dagster.algorithms.modular_rsi.modules import INTEGRATION, all_files
from flashrsi_dagster.algorithms.modular_rsi.plan import State
from flashrsi_dagster.algorithms.modular_rsi.protocol import (
    Finding,
    ProtocolError,
    Verdict,
    read_findings,
    read_verdict,
)
from flashrsi_dagster.algorithms.modular_rsi.records import (
    Check,
    EditRecord,
    FindingsRecord,
    Gate,
    StepRecord,
)
from flashrsi_dagster.algorithms.modular_rsi.references import (
    REFERENCES,
    branch_references,
    remove_references,
)
from flashrsi_dagster.algorithms.modular_rsi.summary import BudgetError, summarize
from flashrsi_dagster.answers import ask_until_read, attempt_name
from flashrsi_dagster.benchmarks.base import SystemicFault, Task
from flashrsi_dagster.records import Status, Trajectory
from flashrsi_dagster.scratch import scratch_dir
from flashrsi_dagster.snapshots import Snapshot

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.modular_rsi.run import ModularRSI


class Abort(Exception):
    """The experiment ends here (a Worker failure, a protocol error); the reason is kept."""


class WorkerFailed(Abort):
    """The Worker's run failed, or answered outside the protocol: an abort, unless an adopted
    harness was the Worker (`_Step.failed`)."""


class _Step:
    """What both kinds of step do: a Worker edit of `parent`, committed and gated."""

    phase = "branch"

    def __init__(self, algorithm: ModularRSI, state: State, slot: str, k: int) -> None:
        self.a, self.state, self.slot, self.k = algorithm, state, slot, k
        self.store = algorithm.experiment.snapshots
        self.seed = algorithm.seed()
        self.improver: str | None = None
        """The harness that analyses and edits in this step (`improver_for`)."""
        self.repair = 0
        """The gate repair under way (`gate_and_repair`); 0: the step's own edit."""

    def part(self, name: str) -> str:
        """A record's part name: `worker`, or `repair-1-worker` during the first repair."""
        return f"repair-{self.repair}-{name}" if self.repair else name

    def improver_for(self, parent: Snapshot) -> str | None:
        """Under `worker.harness: adopted`, the harness that analyses and edits: the version
        the step starts from (the module's branch now, or the merge so far), unless it has
        already failed as the Worker; then, and under `fixed`, the Worker role's own."""
        if not self.a.config.adopted_improver() or parent.id in self.state.failed_improvers():
            return None
        return parent.id

    def improver_note(self) -> str:
        """What the Worker's instructions add when an adopted harness runs them."""
        return improver_note(self.store.get(self.improver)) if self.improver else ""

    def failed(self, parent: Snapshot, reason: str, **fields: Any) -> StepRecord:
        """The Worker failed: the experiment aborts, unless an adopted harness was the Worker
        (then only the step is rejected, and that harness edits no more)."""
        status = "rejected" if self.improver else "aborted"
        return self.record(parent, status, reason, edit_failed=True, **fields)

    def record(self, parent: Snapshot, status: str, reason: str, **fields) -> StepRecord:
        candidate = fields.pop("candidate", None)
        fields.setdefault("produced_by", self.improver)
        accepted = status == "accepted" and candidate is not None
        return StepRecord(
            slot=self.slot,
            round=self.k,
            phase=self.phase,  # type: ignore[arg-type]
            status=status,  # type: ignore[arg-type]
            parent_id=parent.id,
            current_id=candidate.id if accepted else parent.id,
            candidate_id=candidate.id if candidate is not None else None,
            reason=reason,  # model text: redacted as it is written (`ModularRSI.write`)
            **fields,
        )

    def edit(self, parent: Snapshot, instruction: str, references: dict[str, str]) -> EditRecord:
        """The Worker's edit of a checkout of `parent` (with the branches' versions beside it
        when `references` is given), committed as its child."""
        with scratch_dir("edit-") as tmp:
            edit_dir = self.store.check_out(parent, tmp / "edit")
            try:
                worker = self._worker_edit(edit_dir, instruction, references)
                self.a.write(self.a.layout.step(self.slot, self.k, self.part("worker")), worker)
                if worker.status != Status.SUCCESS:
                    detail = worker.error.message if worker.error else "no error recorded"
                    edit = EditRecord(
                        status="worker_failed",
                        parent_id=parent.id,
                        reason=f"the Worker's edit failed ({worker.status}): {detail}",
                    )
                else:
                    remove_references(edit_dir)  # a copy the Worker made, say
                    edit = self._commit(parent, edit_dir)
            finally:
                self.store.forget_checkout(edit_dir)
        self.a.write(self.a.layout.step(self.slot, self.k, self.part("edit")), edit)
        if edit.status == "worker_failed":
            raise WorkerFailed(edit.reason or "the Worker failed")
        if edit.status in ("noop", "refused") and self.improver is not None:
            # an adopted harness that switched off its own editing would keep its turn
            raise WorkerFailed(
                f"the adopted harness {self.improver[:12]} gave no candidate: its edit was "
                f"{edit.status} ({edit.reason or 'no reason recorded'})"
            )
        return edit

    def _worker_edit(self, edit_dir, instruction: str, references: dict[str, str]) -> Trajectory:
        worker, task_id = self.a.improver(self.improver), f"{self.slot}-{self.k}-edit"
        instruction += self.improver_note()
        if not references:
            return worker.edit(edit_dir, instruction, task_id=task_id)
        with branch_references(self.store, edit_dir, references) as mount:
            return worker.edit(edit_dir, instruction, task_id=task_id, mounts=(mount,))

    def _commit(self, parent: Snapshot, edit_dir) -> EditRecord:
        outcome = self.store.commit_child(
            parent,
            edit_dir,
            message=f"modular-rsi {self.slot} step {self.k}",
            metadata={"slot": self.slot, "round": self.k, "produced_by": self.improver},
        )
        refusals = "; ".join(str(r) for r in outcome.refusals) if outcome.refusals else None
        return EditRecord(
            status=outcome.status,
            parent_id=parent.id,
            snapshot_id=outcome.snapshot.id if outcome.snapshot else None,
            changed=[f"{c.status} {c.path}" for c in outcome.changed],
            reason=outcome.reason or refusals,
        )

    def gate(
        self, parent: Snapshot, edit: EditRecord, files: Sequence[str], module: str
    ) -> tuple[Snapshot | None, list[Gate]]:
        """Scope, content, compile and review, stopping at the first that fails; the
        candidate (None if nothing was committed) and the verdicts so far."""
        if edit.status == "refused":
            reason = f"the edit was refused: {edit.reason}"
            return None, [Gate(name="scope", passed=False, reason=reason)]
        assert edit.snapshot_id is not None
        candidate = self.store.get(edit.snapshot_id)
        changed = self.store.changed_paths(parent, candidate)
        verdicts = [gates.scope_gate(changed, files)]
        if verdicts[-1].passed:
            content = self.a.check_content(
                candidate, self.a.layout.step(self.slot, self.k, self.part("content"))
            )
            verdicts.append(gates.content_gate(content))
        if verdicts[-1].passed:
            verdicts.append(gates.compile_gate(self.store, candidate, changed))
        if verdicts[-1].passed:
            verdicts.append(self.review(parent, candidate, files, module))
        return candidate, verdicts

    def gate_and_repair(
        self, parent: Snapshot, edit: EditRecord, files: Sequence[str], module: str, references
    ) -> tuple[Snapshot | None, list[Gate], list[Gate]]:
        """`gate`, then, while a compile or review finding stands and `gate_repairs` last, the
        Worker repairs the candidate told the finding (a checkout of it, committed as its
        child; records `step-<k>-repair-<n>-*`) and the gates run again on the whole change
        from `parent`. A repair that changes nothing or is refused leaves the finding. The
        last candidate, its verdicts, and the findings repaired."""
        candidate, verdicts = self.gate(parent, edit, files, module)
        repaired: list[Gate] = []
        while (found := _repairable(verdicts)) and self.repair < self.a.config.gate_repairs:
            assert candidate is not None
            self.repair += 1
            repaired.append(found)
            instruction = prompts.gate_repair_instruction(module, files, found.name, found.reason)
            fix = self.edit(candidate, instruction, references)
            if fix.status != "committed":
                break
            candidate, verdicts = self.gate(parent, fix, files, module)
        return candidate, verdicts, repaired

    def review(self, parent: Snapshot, candidate: Snapshot, files, module: str) -> Gate:
        diff = self.store.diff(parent, candidate)

        def run(instruction: str) -> Trajectory:
            with scratch_dir("review-") as folder:
                task_id = f"{self.slot}-{self.k}-review"
                return self.a.reviewer.run(folder, instruction, task_id=task_id)

        def read(run: Trajectory) -> Verdict:
            if run.status != Status.SUCCESS:
                detail = run.error.message if run.error else "no error recorded"
                raise Abort(f"the review run failed ({run.status}): {detail}")
            return read_verdict(run.answer)

        instruction = prompts.review_instruction(module, files, diff)
        return gates.review_gate(self.ask("review", run, read, instruction, fails=Abort))

    def ask[T](
        self,
        part: str,
        run: Callable[[str], Trajectory],
        read: Callable[[Trajectory], T],
        instruction: str,
        *,
        fails: type[Abort],
    ) -> T:
        """A structured answer (`part`: the analysis, the review), asked again with the parse
        error while retries are left (`answers.ask_until_read`); every run is kept, the
        deciding one as `step-<k>-<part>.json`, each retried one as
        `step-<k>-<part>-malformed-<n>.json`. Retries spent: `fails` (the seed's abort)."""

        def keep(trajectory: Trajectory, retried: int | None) -> None:
            path = self.a.layout.step(self.slot, self.k, attempt_name(self.part(part), retried))
            self.a.write(path, trajectory)

        retries = self.a.config.answer_retries
        try:
            return ask_until_read(run, read, instruction, retries=retries, keep=keep)
        except ProtocolError as exc:
            raise fails(str(exc)) from None


class BranchStep(_Step):
    """One batch of a module's branch: rollouts, analysis, one edit, the gates."""

    def __init__(self, algorithm: ModularRSI, state: State, module: str, k: int) -> None:
        super().__init__(algorithm, state, module, k)
        self.files = tuple(algorithm.config.modules[module])
        self.ids = list(algorithm.schedule.batches[k])

    def run(self) -> StepRecord:
        parent = self.store.get(self.state.current(self.slot, self.k, self.seed.id))
        self.improver = self.improver_for(parent)
        tasks = self.a.tasks(self.ids)
        fields: dict[str, Any] = {"tasks": self.ids, "eval_set": self.a.evaluation_set()}
        try:
            final, batch_error = self.batch(parent, tasks)
            findings = self.analyse(parent, final, batch_error)
            if not findings.targets:
                return self.record(
                    parent, "no_change", "the analysis found nothing to change", **fields
                )
            instruction = prompts.edit_instruction(
                self.slot, self.files, rank_targets(findings.findings, self.a.config.edit_budget)
            )
            edit = self.edit(parent, instruction, {})
            if edit.status == "noop":
                return self.record(
                    parent, "no_change", "the Worker's edit changed nothing", **fields
                )
            candidate, verdicts, fields["repaired"] = self.gate_and_repair(
                parent, edit, self.files, self.slot, {}
            )
            if all(g.passed for g in verdicts):
                assert candidate is not None
                verdicts += self.execute(parent, candidate, tasks)
        except WorkerFailed as exc:
            return self.failed(parent, str(exc), **fields)
        except Abort as exc:
            return self.record(parent, "aborted", str(exc), **fields)
        failed = next((g for g in verdicts if not g.passed), None)
        if failed is not None:
            reason = f"{failed.name} gate: {failed.reason}"
            return self.record(
                parent, "rejected", reason, candidate=candidate, gates=verdicts, **fields
            )
        assert candidate is not None
        changed = [f"{c.status} {c.path}" for c in self.store.changed_paths(parent, candidate)]
        reason = f"accepted: {', '.join(changed)}"
        return self.record(
            parent, "accepted", reason, candidate=candidate, gates=verdicts, **fields
        )

    def batch(
        self, parent: Snapshot, tasks: tuple[Task, ...]
    ) -> tuple[list[Trajectory], str | None]:
        """The batch's rollouts, or the fault that stopped them: evidence against the whole
        batch, blaming no task. A systemic fault (a refused key, a missing engine) stops."""
        path = self.a.layout.rollouts(self.slot, self.k)
        try:
            return self.a.rollouts(parent, tasks, path, self.a.config.num_rollouts), None
        except SystemicFault:
            raise
        except Exception as exc:  # a benchmark's rollout or scoring protocol broke
            return [], f"{type(exc).__name__}: {exc}"

    def analyse(
        self, parent: Snapshot, final: list[Trajectory], batch_error: str | None
    ) -> FindingsRecord:
        memory = self.a.memory(self.slot, before=self.k)
        groups = group_rollouts(final, memory)
        text = summarize(groups, self.a.config.prompt_budget)
        if batch_error:
            text = (
                f"The batch's rollouts failed as a whole, blaming no single task: {batch_error}\n"
                "It may come from this module's files; fix it if it does.\n\n" + text
            )

        def read(run: Trajectory) -> list[Finding]:
            if run.status != Status.SUCCESS:
                detail = run.error.message if run.error else "no error recorded"
                raise WorkerFailed(f"the Worker's analysis failed ({run.status}): {detail}")
            return read_findings(run.answer, files=self.files, tasks=set(self.ids))

        instruction = prompts.analysis_instruction(self.slot, self.files, text)
        instruction += self.improver_note()
        run = functools.partial(self._analysis_run, parent, final, memory)
        found = self.ask("analysis", run, read, instruction, fails=WorkerFailed)
        targets = rank_targets(found, self.a.config.edit_budget)
        record = FindingsRecord(
            findings=found, targets=[t.file for t in targets], batch_error=batch_error
        )
        self.a.write(self.a.layout.step(self.slot, self.k, "findings"), record)
        return record

    def _analysis_run(self, parent, final, memory, instruction: str) -> Trajectory:
        """The Worker in a folder holding the version, every rollout whole and the memory."""
        with scratch_dir("analysis-") as folder:
            checkout = self.store.check_out(parent, folder / prompts.CANDIDATE)
            try:
                for i, trajectory in enumerate(final):
                    _dump(
                        folder / prompts.TRAJECTORIES / _safe(trajectory.task_id) / f"{i}.json",
                        trajectory,
                    )
                for task_id, trajectory in memory.items():
                    _dump(folder / prompts.MEMORY / f"{_safe(task_id)}.json", trajectory)
                task_id = f"{self.slot}-{self.k}-analysis"
                return self.a.improver(self.improver).run(folder, instruction, task_id=task_id)
            finally:
                self.store.forget_checkout(checkout)

    def execute(self, parent: Snapshot, candidate: Snapshot, tasks: tuple[Task, ...]) -> list[Gate]:
        """The candidate on one task of the batch, drawn with the experiment's seed; with
        `activation_gate`, then whether the change ran in that run."""
        seed = self.a.experiment.config.experiment.seed
        task = random.Random(f"{seed}:{self.slot}:{self.k}:execution").choice(tasks)
        path = self.a.layout.execution(self.slot, self.k)
        try:
            (run,) = self.a.rollouts(candidate, (task,), path, 1)
        except SystemicFault:
            raise
        except Exception as exc:
            reason = f"task {task.id}: the run could not be scored: {type(exc).__name__}: {exc}"
            return [Gate(name="execution", passed=False, reason=reason)]
        executed = gates.execution_gate(run)
        if not executed.passed or not self.a.config.activation_gate:
            return [executed]
        changes = gates.changes_of(self.store, parent, candidate)
        return [executed, gates.activation_gate(run, changes)]


class IntegrationStep(_Step):
    """The merge of the changed branches into the seed, or a repair of the merged version;
    either way gated and then checked on the whole evolution set."""

    def __init__(self, algorithm: ModularRSI, state: State, r: int, phase: str) -> None:
        super().__init__(algorithm, state, INTEGRATION, r)
        self.phase = phase
        self.files = all_files(algorithm.config.modules)
        self.branches = {
            m: state.current(m, 1 << 30, self.seed.id)
            for m in algorithm.modules
            if state.changed(m)
        }

    def run(self) -> StepRecord:
        last = self.accepted_before()
        parent = self.store.get(last.current_id) if last is not None else self.seed
        self.improver = self.improver_for(parent)
        more = self.k < self.a.config.integration_rounds
        try:
            edit = self.edit(parent, self.instruction(last), self.branches)
            if edit.status == "noop":
                return self.record(parent, "no_change", "the Worker changed nothing")
            candidate, verdicts, repaired = self.gate_and_repair(
                parent, edit, self.files, INTEGRATION, self.branches
            )
        except WorkerFailed as exc:
            return self.failed(parent, str(exc))
        except Abort as exc:
            return self.record(parent, "aborted", str(exc))
        failed = next((g for g in verdicts if not g.passed), None)
        if failed is not None:
            reason = f"{failed.name} gate: {failed.reason}"
            return self.record(
                parent,
                "rejected",
                reason,
                candidate=candidate,
                gates=verdicts,
                more=more,
                repaired=repaired,
            )
        assert candidate is not None
        check = self.full_check(candidate)
        more = more and bool(check.runtime_errors or check.failed)
        reason = (
            f"{self.phase} accepted; full check {check.score:.3f} over {check.tasks} tasks, "
            f"{len(check.runtime_errors)} runtime error(s)"
        )
        return self.record(
            parent,
            "accepted",
            reason,
            candidate=candidate,
            gates=verdicts,
            check=check,
            more=more,
            repaired=repaired,
        )

    def accepted_before(self) -> StepRecord | None:
        done = [r for r in self.state.branch(INTEGRATION) if r.round < self.k]
        accepted = [r for r in done if r.status == "accepted"]
        return accepted[-1] if accepted else None

    def instruction(self, last: StepRecord | None) -> str:
        if self.phase == "merge" or last is None or last.check is None:
            stats = [
                (m, _diffstat(self.store.diff_stats(self.seed, sid)))
                for m, sid in self.branches.items()
            ]
            return prompts.integration_instruction(self.files, REFERENCES, stats)
        problems = _problems(last.check)
        return prompts.repair_instruction(self.files, REFERENCES, problems, self.evidence(last))

    def evidence(self, last: StepRecord) -> str:
        """The re-diagnosis's evidence: the full check's runs of the tasks with problems,
        grouped as a branch's analysis groups them, an all-failed task beside the earliest
        success any branch had of it, within `prompt_budget` (`summary.py`; a budget too
        small for the skeleton aborts, as a branch's analysis does)."""
        assert last.check is not None
        troubled = {*last.check.runtime_errors, *last.check.failed}
        runs = [t for t in self.a.step_rollouts(INTEGRATION, last.round) if t.task_id in troubled]
        memory: dict[str, Trajectory] = {}
        for module in self.a.modules:
            for task_id, run in self.a.memory(module, before=self.a.plan.branch_steps).items():
                memory.setdefault(task_id, run)
        try:
            return summarize(group_rollouts(runs, memory), self.a.config.prompt_budget)
        except BudgetError as exc:
            raise Abort(str(exc)) from None

    def full_check(self, candidate: Snapshot) -> Check:
        tasks = self.a.splits.train
        version = self.a.evaluation_set()
        final = self.a.rollouts(candidate, tasks, self.a.layout.check(self.k), 1)
        broken = [t.task_id for t in final if t.status in gates.RUNTIME_FAULTS]
        wrong = [
            t.task_id for t in final if t.status not in (*gates.RUNTIME_FAULTS, Status.SUCCESS)
        ]
        score = math.fsum(t.score or 0.0 for t in final) / len(tasks)  # exact: any order
        return Check(
            snapshot_id=candidate.id,
            score=score,
            tasks=len(tasks),
            runtime_errors=broken,
            failed=wrong,
            eval_set=version,
        )


def _repairable(verdicts: list[Gate]) -> Gate | None:
    """A compile or review finding the Worker may repair; never scope (a refused or
    out-of-range edit uses up the batch, seed 001) nor content (benchmark content in a
    candidate is the host's refusal, not a finding to negotiate)."""
    failed = next((g for g in verdicts if not g.passed), None)
    return failed if failed is not None and failed.name in ("compile", "review") else None


def _problems(check: Check) -> str:
    lines = [f"Full check of the merged version: score {check.score:.3f} over {check.tasks} tasks."]
    if check.runtime_errors:
        lines.append(f"Runs that broke (error or timeout): {', '.join(check.runtime_errors)}.")
    if check.failed:
        lines.append(f"Tasks answered wrongly: {', '.join(check.failed)}.")
    if len(lines) == 1:
        lines.append("Every task succeeded: look for conflicts and duplicated mechanisms only.")
    return "\n".join(lines)


def _diffstat(stats) -> str:
    return f"{stats.files} file(s), +{stats.insertions} -{stats.deletions}"


def _safe(task_id: str) -> str:
    """A task id as one file name (ids come from the benchmark, not the Worker)."""
    name = task_id.replace("/", "_").replace("\0", "_")
    return "_" if name in ("", ".", "..") else name


def _dump(path, trajectory: Trajectory) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(trajectory.model_dump_json(indent=1), encoding="utf-8")
