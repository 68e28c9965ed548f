"""The Evolver in words, as the CLI prints it: a line per step, and the whole experiment."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.evolver.nodes import Node
from flashrsi_dagster.algorithms.evolver.plan import State, stopped
from flashrsi_dagster.algorithms.evolver.records import RetentionReport, RoundPlan, node_id
from flashrsi_dagster.records import read_optional

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.evolver.run import Evolver


def plan_line(plan: RoundPlan) -> str:
    if plan.error:
        return f"round {plan.round}: errored — {plan.error}"
    if not plan.whys:
        return f"round {plan.round}: nothing to work on ({plan.note})"
    extra = f" + {len(plan.recombine)} recombination(s)" if plan.recombine else ""
    return (
        f"round {plan.round}: parent {plan.parent_id[:12]}; WHYs {', '.join(plan.whys)} "
        f"(chosen by the {plan.source}); {len(plan.slots)} candidate(s){extra}"
    )


def node_line(node: Node) -> str:
    mean = f", confirm {node.confirm_mean:.4f}" if node.confirm_mean is not None else ""
    return f"{node.id} [{node.why}, {node.where or '-'}]: {node.state}{mean} — {node.reason}"


def retention_line(row: dict) -> str:
    retained = "-" if row["retained"] is None else f"{row['retained']:.2f}"
    return (
        f"{row['label']:<9} {row['snapshot_id'][:12]} train {row['train']:.4f} test "
        f"{row['test']:.4f} (lifts {row['train_lift']:+.4f} / {row['test_lift']:+.4f}, "
        f"retained {retained})"
    )


def step_line(e: Evolver, state: State, step: Step) -> str:
    r = step.round
    if step.action == "cold_start" and state.cold_start is not None:
        c = state.cold_start
        return f"   cold start: vanilla K={c.k} mean {c.mean:.4f}, {c.failing} failing"
    current = state.round(r) if r is not None else None
    if step.action == "diagnose" and current is not None and current.plan is not None:
        return f"   {plan_line(current.plan)}"
    if step.action == "candidate" and r is not None and step.slot is not None:
        node = read_optional(e.layout.node(node_id(r, step.slot)), Node)
        return f"   {node_line(node)}" if node else f"   {step.describe()}: no result"
    if step.action == "decide" and current is not None and current.decision is not None:
        d = current.decision
        return f"   round {d.round}: {d.outcome} — {d.reason}"
    if step.action == "sealed_test" and state.retention:
        return "   test unsealed: retention report written"
    return f"   {step.describe()}: no result"


def summary(e: Evolver, state: State) -> list[str]:
    lines = []
    if state.cold_start is not None:
        c = state.cold_start
        lines.append(f"cold start: vanilla mean {c.mean:.4f} (K={c.k}), {c.failing} failing")
    for rd in state.rounds:
        if rd.plan is not None:
            lines.append(plan_line(rd.plan))
            lines += [f"  {node_line(rd.nodes[s])}" for s in rd.plan.slots if s in rd.nodes]
        if rd.decision is not None:
            lines.append(f"  decision: {rd.decision.outcome} — {rd.decision.reason}")
    reason = stopped(state, e.shape)
    if reason is not None:
        lines.append(f"terminated: {reason} (after {len(state.outcomes())} round(s))")
    report = read_optional(e.layout.retention, RetentionReport)
    if report is not None:
        lines.append(f"unsealed test ({report.eval_set}, K={report.k}):")
        lines += [f"  {retention_line(row)}" for row in report.rows]
    return lines
