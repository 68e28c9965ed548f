"""What the Evolver remembers across rounds in words and counts: `history.json` (attempts by
WHY, which feed its decay) and `findings.md` (one section per round: what was chosen and why,
each candidate's fate, the decision)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from flashrsi_dagster.algorithms.evolver.choose import WhyHistory
from flashrsi_dagster.algorithms.evolver.nodes import Node
from flashrsi_dagster.algorithms.evolver.records import RoundDecision, RoundPlan

FAILED = frozenset({"pruned_at_screen", "pruned_at_confirm"})


def why_history(nodes: Iterable[Node]) -> dict[str, WhyHistory]:
    """Per WHY: candidates tried that lost (culled at screen, or no win at confirm) and those
    whose mechanism never fired (inert). Errored and blocked candidates are no evidence."""
    counts: dict[str, list[int]] = {}
    for node in nodes:
        failed, inert = counts.setdefault(node.why, [0, 0])
        counts[node.why] = [failed + (node.state in FAILED), inert + (node.state == "pruned_inert")]
    return {why: WhyHistory(failed=f, inert=i) for why, (f, i) in counts.items()}


def findings_section(plan: RoundPlan, nodes: Sequence[Node], decision: RoundDecision) -> str:
    """The round's section of findings.md."""
    lines = [
        f"## Round {plan.round}",
        "",
        f"Parent `{plan.parent_id[:12]}`. WHYs: {', '.join(plan.whys)} (chosen by the "
        f"{plan.source}{'; ' + plan.note if plan.note else ''}).",
        "Formula ranking (shadow log): "
        + (", ".join(f"{why} {weight:.2f}" for why, weight in plan.shadow) or "none"),
        "",
        "| candidate | WHY | WHERE | state | confirm mean | credited 2-sigma | reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for node in nodes:
        mean = "-" if node.confirm_mean is None else f"{node.confirm_mean:.4f}"
        credited = {True: "yes", False: "no", None: "-"}[node.credited_2sigma]
        reason = " ".join(node.reason.split()).replace("|", "\\|")
        lines.append(
            f"| {node.id} | {node.why} | {node.where or '-'} | {node.state} | {mean} "
            f"| {credited} | {reason} |"
        )
    lines += ["", f"Decision: {decision.outcome}; {decision.reason}", ""]
    return "\n".join(lines)
