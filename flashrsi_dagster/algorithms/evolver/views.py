"""The Evolver's records as markdown: the stability ledger, the failure map, a round's plan,
a candidate's screen, gates and paired statistics, the QD archive, the rounds so far and the
retention report."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from flashrsi_dagster.algorithms.evolver.failure_map import FailureMap
from flashrsi_dagster.algorithms.evolver.nodes import Node
from flashrsi_dagster.algorithms.evolver.plan import State
from flashrsi_dagster.algorithms.evolver.records import RoundPlan
from flashrsi_dagster.views.figures import MISSING, score_text
from flashrsi_dagster.views.markup import markdown_table

YES_NO = {True: "yes", False: "no", None: MISSING}
_MOVES = ("fixed", "flipped", "still_failing")


def _short(snapshot_id: str | None) -> str:
    return snapshot_id[:12] if snapshot_id else MISSING


def _signed(value: float | None) -> str:
    return MISSING if value is None else f"{value:+.3f}"


def stability_markdown(rates: Mapping[str, float]) -> str:
    """Vanilla's per-task rate over its K runs: the stability ledger the screen reads."""
    if not rates:
        return "_no train task was run_"
    rows = [(task, score_text(rate), _passes(rate)) for task, rate in sorted(rates.items())]
    return markdown_table(("task", "rate over K", "passes"), rows)


def _passes(rate: float) -> str:
    return "always" if rate >= 1 else "never" if rate <= 0 else "sometimes"


def changed_markdown(changed: Sequence[str]) -> str:
    """A candidate's changed files (`<status> <path>` each, as git names them)."""
    if not changed:
        return "_nothing committed_"
    return markdown_table(("change", "path"), [c.split(" ", 1) for c in changed])


def why_counts_markdown(failure_map: FailureMap) -> str:
    """Failing train tasks per WHY class (every class of the taxonomy, zeros too)."""
    rows = [
        (why, count, ", ".join(failure_map.tasks_of(why)) or MISSING)
        for why, count in failure_map.failing_by_why().items()
    ]
    return markdown_table(("WHY", "failing tasks", "tasks"), rows)


def failing_markdown(failure_map: FailureMap) -> str:
    """Each failing task's diagnosis: its WHY, the model's WHERE hint, the evidence."""
    if not failure_map.failing:
        return "_no failing train task is diagnosed_"
    rows = [
        (task, d.why, d.where or MISSING, d.round, d.evidence or MISSING)
        for task, d in sorted(failure_map.failing.items())
    ]
    return markdown_table(("task", "WHY", "WHERE hint", "diagnosed in round", "evidence"), rows)


def children_markdown(failure_map: FailureMap) -> str:
    """The re-diagnosed children: per node the tasks it fixed, flipped and still fails, and
    the flips kept with their harm replay."""
    if not failure_map.children and not failure_map.flips:
        return "_no child re-diagnosed yet_"
    rows = [
        (node, *(", ".join(moved.get(kind, [])) or MISSING for kind in _MOVES))
        for node, moved in sorted(failure_map.children.items())
    ]
    table = markdown_table(("node", *_MOVES), rows)
    flips = [(f.task, f.round, _short(f.candidate), f.excerpt) for f in failure_map.flips]
    if flips:
        table += "\n\n**Flips** (harm replay, cut):\n\n"
        table += markdown_table(("task", "round", "candidate", "regressed run"), flips)
    return table


def plan_markdown(plan: RoundPlan) -> str:
    """A round's plan: the WHYs and who chose them, the formula's ranking (always logged),
    each WHY's anchor set and the recombinations."""
    if plan.error:
        return f"**The round is errored:** {plan.error}"
    lines = [
        f"WHYs: {', '.join(plan.whys) or 'none'} (chosen by the {plan.source})"
        + (f"; {plan.note}" if plan.note else ""),
        "",
        "**Formula ranking** (shadow log):",
        "",
        markdown_table(("WHY", "weight"), [(w, f"{x:.3f}") for w, x in plan.shadow])
        if plan.shadow
        else "_none_",
        "",
        "**Anchor sets** (train):",
        "",
        markdown_table(("WHY / slot", "tasks"), [(k, ", ".join(v)) for k, v in plan.anchor.items()])
        if plan.anchor
        else "_none_",
    ]
    if plan.recombine:
        rows = [(slot, " + ".join(pair)) for slot, pair in plan.recombine.items()]
        lines += ["", markdown_table(("slot", "elites merged"), rows)]
    return "\n".join(lines)


def screen_markdown(scores: Mapping[str, float], vanilla: Mapping[str, float]) -> str:
    """The K=1 screen per anchor task against vanilla's rate over K."""
    if not scores:
        return "_no screen rollouts_"
    rows = [
        (task, score_text(score), score_text(vanilla.get(task)), _signed(score - vanilla[task]))
        for task, score in sorted(scores.items())
        if task in vanilla
    ]
    return markdown_table(("task", "candidate (K=1)", "vanilla rate", "d"), rows)


def gates_markdown(gates: Sequence[Mapping]) -> str:
    rows = [(g["name"], "pass" if g["passed"] else "**fail**", g["reason"]) for g in gates]
    return markdown_table(("gate", "verdict", "reason"), rows) if rows else "_not gated_"


def paired_markdown(paired: Mapping | None) -> str:
    """The paired statistics against vanilla (`gates.Credit`): labels, never conditions."""
    if paired is None:
        return "_no paired statistics: the candidate was not confirmed_"
    rows = [
        ("paired tasks", paired.get("n", MISSING)),
        ("lift (mean of d)", _signed(paired.get("lift"))),
        ("z (paired t)", MISSING if paired.get("z") is None else f"{paired['z']:.3f}"),
        ("credited 2-sigma", YES_NO[paired.get("credited_2sigma")]),
        ("small-n verdict", paired.get("small_n", MISSING)),
    ]
    return markdown_table(("statistic", "value"), rows)


def nodes_markdown(nodes: Iterable[Node]) -> str:
    rows = [
        (
            n.id,
            n.why,
            n.where or MISSING,
            n.state,
            score_text(n.confirm_mean),
            YES_NO[n.credited_2sigma],
            n.reason,
        )
        for n in nodes
    ]
    header = ("node", "WHY", "WHERE", "state", "confirm mean", "credited 2-sigma", "reason")
    return markdown_table(header, rows) if rows else "_no candidate_"


def archive_markdown(archive: Mapping[str, Mapping]) -> str:
    """The QD archive: the elite of each WHERE x WHY cell."""
    if not archive:
        return "_the archive is empty: no candidate passed every gate_"
    rows = [
        (cell, e["node"], _short(e.get("snapshot_id")), score_text(e.get("confirm_mean")))
        for cell, e in sorted(archive.items())
    ]
    return markdown_table(("cell (WHERE:WHY)", "elite", "snapshot", "confirm mean"), rows)


def rounds_markdown(state: State) -> str:
    """Every round so far: its WHYs, candidates, outcome and the parent after it."""
    rows = []
    for rd in state.rounds:
        plan, decision = rd.plan, rd.decision
        assert plan is not None
        rows.append(
            (
                plan.round,
                ", ".join(plan.whys) or MISSING,
                f"{len(rd.nodes)}/{len(plan.slots)}",
                sum(n.library for n in rd.nodes.values()),
                decision.outcome if decision else "running",
                _short(decision.parent_after) if decision else MISSING,
                plan.error or (decision.reason if decision else plan.note or MISSING),
            )
        )
    header = ("round", "WHYs", "candidates done", "in library", "outcome", "parent after", "why")
    return markdown_table(header, rows) if rows else "_no round yet_"


def retention_markdown(rows: Sequence[Mapping]) -> str:
    """Each delivered version on train and on the unsealed test, and the lift retained."""
    table = [
        (
            r["label"],
            _short(r["snapshot_id"]),
            score_text(r["train"]),
            score_text(r["test"]),
            _signed(r["train_lift"]),
            _signed(r["test_lift"]),
            MISSING if r["retained"] is None else f"{r['retained']:.2f}",
        )
        for r in rows
    ]
    header = ("version", "snapshot", "train", "test", "train lift", "test lift", "retained")
    return markdown_table(header, table)
