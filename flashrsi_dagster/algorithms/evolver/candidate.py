"""One candidate slot of a round: the funnel's steps 2-6 for one WHY x candidate (or one
cross-cell recombination), ending in its node.

    design (the Worker edits a checkout of the parent) or recombine (two elites' diffs)
    -> apply: a real git child of the parent, through the path guard (refused: blocked_l1;
       nothing changed: pruned_inert); the changed files come from git, WHERE from them
    -> the beacon guard (Python without an activation beacon: blocked_l1), the content check
       (benchmark tasks or answers in its files: blocked_l1), the optional zero-hit preflight
       (pruned_inert)
    -> screen: K=1 on the WHY's anchor set against vanilla's rates (cull: pruned_at_screen)
    -> confirm: the whole train split x K; the gates Gate-f -> Gate-b (pruned_inert) -> Gate2
       (pruned_at_confirm); past them all the node is `in_library`
The candidate's own failure (its design run, a rollout protocol) makes it `errored`: data,
not a crash of the round. A systemic fault (a refused key, a missing engine) stops the step.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.base import StepOrderError
from flashrsi_dagster.algorithms.evolver.beacon import (
    beacon_names,
    beacon_refusal,
    compiled_refusal,
)
from flashrsi_dagster.algorithms.evolver.choose import WhyHistory
from flashrsi_dagster.algorithms.evolver.confirm_gates import confirmed, credit, run_gates
from flashrsi_dagster.algorithms.evolver.history import why_history
from flashrsi_dagster.algorithms.evolver.nodes import Node
from flashrsi_dagster.algorithms.evolver.plan import State
from flashrsi_dagster.algorithms.evolver.prompts import design_instruction
from flashrsi_dagster.algorithms.evolver.records import Applied, node_id
from flashrsi_dagster.algorithms.evolver.screen import screen
from flashrsi_dagster.algorithms.evolver.train_runs import instruction_of
from flashrsi_dagster.algorithms.evolver.where import bind_where
from flashrsi_dagster.algorithms.improver import improver_note
from flashrsi_dagster.benchmarks.base import SystemicFault
from flashrsi_dagster.evaluator import EvaluatorChanged, basis
from flashrsi_dagster.records import IntegrityError, Status, read_optional
from flashrsi_dagster.scratch import scratch_dir
from flashrsi_dagster.snapshots import Snapshot, SnapshotError

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.evolver.run import Evolver

_WORD = re.compile(r"\w{1,64}")
CONTENT = "content.json"
"""A candidate's contamination verdict (`contamination.ContentVerdict`), beside its runs."""
EXAMPLES = 8
FLIPS = 3
PREFLIGHT_SECONDS = 10.0
"""How long the zero-hit preflight may search the anchor texts for a TRIGGER (a designer's
regex, run on the host): past it the search is killed and the preflight prunes nothing."""
_SEARCH = (
    "import json, re, sys\n"
    "trigger, texts = json.load(sys.stdin)\n"
    "try:\n    pattern = re.compile(trigger)\n"
    "except re.error as exc:\n    print(json.dumps({'error': str(exc)})); sys.exit()\n"
    "print(json.dumps({'hits': sum(bool(pattern.search(t)) for t in texts)}))\n"
)


class Stop(Exception):
    """The candidate ends here, in `state`, for `reason`."""

    def __init__(self, state: str, reason: str) -> None:
        super().__init__(reason)
        self.state, self.reason = state, reason


class CandidateStep:
    def __init__(self, evolver: Evolver, state: State, r: int, slot: str) -> None:
        self.e, self.state, self.r, self.slot = evolver, state.at_start_of(r), r, slot
        current = self.state.round(r)
        assert current is not None and current.plan is not None
        self.plan = current.plan
        self.store = evolver.experiment.snapshots
        self.parent = self.store.get(self.plan.parent_id)
        if slot in self.plan.recombine:
            pair = [self.node(i) for i in self.plan.recombine[slot]]
            self.pair = pair
            self.why = "+".join(n.why for n in pair)
            self.anchor = self.plan.anchor[slot]
        else:
            i, j = (int(x) for x in slot[1:].split("c"))
            self.pair, self.index = [], j
            self.why = self.plan.whys[i - 1]
            self.anchor = self.plan.anchor[self.why]
        self.improver = self.improver_for(evolver)
        self.fields: dict = {
            "id": node_id(r, slot),
            "round": r,
            "slot": slot,
            "why": self.why,
            "parent_id": self.parent.id,
        }

    def improver_for(self, evolver: Evolver) -> str | None:
        """Under `worker.harness: adopted`, the harness that designs the change: the round's
        parent (the library's best so far), unless it has already failed as the Worker;
        then, and under `fixed`, the Worker role's own."""
        if not evolver.config.adopted_improver():
            return None
        failed = {n.produced_by for n in evolver.nodes(self.state) if n.improver_failed}
        return None if self.parent.id in failed else self.parent.id

    def node(self, id_: str) -> Node:
        return next(n for n in self.e.nodes(self.state) if n.id == id_)

    def path(self, part: str) -> Path:
        return self.e.layout.candidate(self.r, self.slot, part)

    def run(self) -> Node:
        try:
            child = self.apply()
            self.guards(child)
            self.same_train_as_vanilla()
            self.screen(child)
            state, reason = self.confirm(child)
        except Stop as stop:
            state, reason = stop.state, stop.reason
        except (SystemicFault, EvaluatorChanged, IntegrityError, StepOrderError):
            raise  # the environment or the records, not this candidate: the step stops
        except Exception as exc:  # the candidate's own machinery broke: data, not a crash
            state, reason = "errored", f"{type(exc).__name__}: {exc}"
        library = state == "in_library"
        return Node(state=state, reason=reason, library=library, **self.fields)  # type: ignore[arg-type]

    # -- design and apply -----------------------------------------------------------------

    def apply(self) -> Snapshot:
        """The candidate's git child of the parent (made once: `applied.json`)."""
        applied = read_optional(self.path("applied.json"), Applied)
        if applied is None:
            applied = self.e.write(self.path("applied.json"), self.make())
        self.fields["declared_where"] = applied.declared_where
        self.fields["produced_by"] = applied.produced_by
        self.trigger = applied.trigger
        if applied.status == "failed":
            self.fields["improver_failed"] = applied.produced_by is not None
            raise Stop("errored", applied.reason or "the design failed")
        if applied.status == "refused":
            raise Stop("blocked_l1", f"the edit was refused: {applied.reason}")
        if applied.status == "noop" or applied.snapshot_id is None:
            raise Stop("pruned_inert", f"nothing to run: {applied.reason}")
        self.fields["snapshot_id"] = applied.snapshot_id
        self.fields["changed"] = applied.changed
        paths = [entry.split(" ", 1)[1] for entry in applied.changed]
        self.fields["where"] = bind_where(paths, self.parent.components)
        return self.store.get(applied.snapshot_id)

    def make(self) -> Applied:
        with scratch_dir("evolver-edit-") as tmp:
            checkout = self.store.check_out(self.parent, tmp / "edit")
            try:
                made = self.recombine(checkout) if self.pair else self.design(checkout)
                made.produced_by = None if self.pair else self.improver  # a merge uses no Worker
                if made.status == "failed":
                    return made
                outcome = self.store.commit_child(
                    self.parent,
                    checkout,
                    message=f"evolver {self.fields['id']} ({self.why})",
                    metadata={
                        "round": self.r,
                        "slot": self.slot,
                        "why": self.why,
                        "produced_by": made.produced_by,
                    },
                )
            finally:
                self.store.forget_checkout(checkout)
        return made.model_copy(
            update={
                "status": outcome.status,
                "snapshot_id": outcome.snapshot.id if outcome.snapshot else None,
                "changed": [f"{c.status} {c.path}" for c in outcome.changed],
                "reason": outcome.reason,
            }
        )

    def design(self, checkout: Path) -> Applied:
        e, why = self.e, self.why
        taxonomy = {w.name: w.description for w in e.taxonomy().whys}
        failure_map = e.failure_map(self.r + 1)
        examples = [failure_map.failing[t] for t in failure_map.tasks_of(why)][:EXAMPLES]
        files = [p.relative_to(checkout).as_posix() for p in checkout.rglob("*") if p.is_file()]
        instruction = design_instruction(
            why,
            taxonomy.get(why, why),
            examples,
            failure_map.flips[-FLIPS:],
            why_history(e.nodes(self.state)).get(why, WhyHistory()),
            index=self.index,
            count=e.shape.budget.candidates_per_why,
            components=self.parent.components.describe(),
            prompt_file=self.parent.components.prompt_file(files),
        )
        if self.improver is not None:
            instruction += improver_note(self.parent)
        task_id = f"{self.fields['id']}-design"
        run = e.improver(self.improver).edit(checkout, instruction, task_id=task_id)
        run = e.write(self.path("design.json"), run)
        if run.status != Status.SUCCESS:
            detail = run.error.message if run.error else "no error recorded"
            return Applied(
                status="failed", reason=f"the design run failed ({run.status}): {detail}"
            )
        answer = run.answer or ""
        where = _WORD.match(said(answer, "WHERE", ignore_case=True) or "")
        return Applied(
            status="committed",
            declared_where=where[0].lower() if where else None,
            trigger=said(answer, "TRIGGER"),
        )

    def recombine(self, checkout: Path) -> Applied:
        """Both elites' changes (each against its own parent) applied to the parent; an
        elite that is the parent or its ancestor is in it already."""
        contained = set(self.store.lineage(self.parent))
        for node in self.pair:
            assert node.snapshot_id is not None
            if node.snapshot_id in contained:
                continue
            patch = self.store.diff(node.parent_id, node.snapshot_id)
            done = subprocess.run(
                ["git", "apply", "--whitespace=nowarn", "-"],
                input=patch.encode("utf-8", "surrogateescape"),
                cwd=checkout,
                capture_output=True,
                check=False,
            )
            if done.returncode != 0:
                detail = done.stderr.decode(errors="replace").strip().splitlines()[:1]
                reason = f"{node.id}'s changes do not apply to the parent: {detail}"
                return Applied(status="failed", reason=reason)
        return Applied(status="committed")

    # -- free prunes ----------------------------------------------------------------------

    def guards(self, child: Snapshot) -> None:
        diff = self.store.diff(self.parent, child)
        source = partial(self.read, child)
        refusal = compiled_refusal(self.fields["changed"]) or beacon_refusal(diff, source)
        if refusal is not None:
            raise Stop("blocked_l1", refusal)
        content = self.e.check_content(child, self.path(CONTENT))
        if content.contaminated:
            raise Stop("blocked_l1", f"content check: {content.reason}")
        self.beacons = beacon_names(diff, source)
        if self.e.config.zero_hit_preflight and self.trigger:
            self.preflight(self.trigger)

    def read(self, child: Snapshot, path: str) -> bytes | None:
        """The child's bytes of `path` (None: not a file of it)."""
        try:
            return self.store.read_file_at(child, path)
        except SnapshotError:
            return None

    def preflight(self, trigger: str) -> None:
        runs = self.e.vanilla_runs()
        texts = [instruction_of(t) for t in runs if t.task_id in self.anchor]
        shown = f"TRIGGER {trigger[:200]!r}"
        try:
            done = subprocess.run(
                [sys.executable, "-I", "-c", _SEARCH],
                input=json.dumps([trigger, texts]),
                capture_output=True,
                text=True,
                timeout=PREFLIGHT_SECONDS,
                check=True,
            )
        except subprocess.TimeoutExpired:
            self.e.log(
                f"{self.fields['id']}: zero-hit preflight undecided: {shown} searched the "
                f"anchor texts for over {PREFLIGHT_SECONDS:g} s (stopped); the screen decides"
            )
            return
        found = json.loads(done.stdout)
        if "error" in found:
            raise Stop("pruned_inert", f"zero-hit preflight: {shown}: {found['error']}")
        if found["hits"] == 0:
            raise Stop(
                "pruned_inert",
                f"zero-hit preflight: {shown} matches none of the {len(texts)} anchor task(s)",
            )

    # -- screen, confirm, gates -----------------------------------------------------------

    def same_train_as_vanilla(self) -> None:
        """The evaluator shown unchanged, and train on vanilla's version: its stability
        ledger is the fixed baseline of the screen and every gate, so a candidate run on
        another version would be scored against tasks vanilla never ran."""
        self.fields["eval_set"] = eval_set = self.e.evaluation_set()
        against = basis(eval_set, self.e.cold_start_record().eval_set)
        if not against.comparable:
            raise Stop("errored", f"cannot be judged against vanilla: {against.label}")

    def screen(self, child: Snapshot) -> None:
        e = self.e
        final = e.rollouts(child, self.anchor, self.path("screen.jsonl"), 1)
        scores = {t.task_id: float(t.score or 0.0) for t in final}
        vanilla = e.vanilla().rates()
        result = screen(scores, {t: vanilla[t] for t in scores}, e.config.screen_threshold)
        self.fields["screen"] = {**asdict(result), "tasks": sorted(scores)}
        if result.stopped:
            raise Stop(
                "pruned_at_screen",
                f"culled at screen: delta {result.delta:+.3f} below -{result.threshold} x "
                f"sigma_screen {result.sigma:.3f} on {result.n} anchor task(s)",
            )

    def confirm(self, child: Snapshot) -> tuple[str, str]:
        e, k = self.e, self.e.config.k
        final = e.rollouts(child, e.train_ids, self.path("confirm.jsonl"), k)
        mine, vanilla = confirmed(final), e.vanilla()
        fired = None
        if self.beacons:
            fired = sorted(
                {t.task_id for t in final if set(t.metadata.get("beacons") or ()) & self.beacons}
            )
        verdicts = run_gates(mine, vanilla, e.train_ids, k, fired)
        paired = credit(mine, vanilla, e.train_ids, e.config.credit_sigma)
        self.fields.update(
            confirm_mean=mine.mean(e.train_ids, k),
            vanilla_mean=vanilla.mean(e.train_ids, k),
            gates=[asdict(v) for v in verdicts],
            fired=fired,
            credited_2sigma=paired.credited_2sigma,
            paired=asdict(paired),
        )
        failed = next((v for v in verdicts if not v.passed), None)
        if failed is None:
            return "in_library", verdicts[-1].reason
        state = "pruned_inert" if failed.name == "gate_b" else "pruned_at_confirm"
        return state, f"{failed.name}: {failed.reason}"


def said(answer: str, key: str, *, ignore_case: bool = False) -> str | None:
    """The value of the answer's first line `<key>: <value>`, stripped (None: no such line).
    Read line by line: linear in the answer, whatever a designer answers (an anchored regex
    over the whole answer backtracked quadratically on long runs of blank lines)."""
    for line in answer.split("\n"):
        head, colon, value = line.strip().partition(":")
        named = head.upper() == key if ignore_case else head == key
        if colon and named and value.strip():
            return value.strip()
    return None
