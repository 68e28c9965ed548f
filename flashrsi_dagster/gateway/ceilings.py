"""The role's per-call settings, held by the gateway as well as applied by the harness: a
model call asks for at most the role's `llm.max_tokens` output tokens and at most its
`llm.reasoning` (effort, Anthropic thinking budget). The harness sets them in code a Worker may
edit (`runtime/llm.py`), and a harness that asked for more would buy its score with compute
the experiment never granted: so a request over a ceiling, or naming none where one is set, is
lowered to it; so is a chat call asking for more than one answer (`n`). Asking for less stays
the harness's choice."""

from __future__ import annotations

from typing import Any

from flashrsi_dagster.gateway.metering import Kind

EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
"""OpenAI reasoning efforts, least first; one not listed counts as over any ceiling."""
_OUTPUT: dict[Kind, tuple[str, ...]] = {
    "chat": ("max_tokens", "max_completion_tokens"),
    "responses": ("max_output_tokens",),
    "messages": ("max_tokens",),
}
"""Output limit fields per API; the first is set when a request names none (as the built-in
harnesses do)."""


def hold_ceilings(
    request: dict[str, Any], kind: Kind, max_output: int | None, effort: str | None,
    thinking: int | None, choices: int = 1,
) -> list[str]:  # fmt: skip
    """Lower, in place, what `request` asks for past the ceilings (None: no ceiling); returns
    what was lowered, one `field: asked -> ceiling` each. `choices`: the answers a chat call
    may ask for (`n`), one unless the role's `extra_body` asks for more: `n: 16` would be
    sixteen samples for one call of the run's budget."""
    held: list[str] = []
    if kind == "chat" and "n" in request:
        _lower(request, "n", choices, _over_count, held)
    if max_output is not None:
        names = _OUTPUT[kind]
        for name in [n for n in names if n in request] or names[:1]:
            _lower(request, name, max_output, _over_count, held)
    if effort is not None and kind == "chat":
        _lower(request, "reasoning_effort", effort, _over_effort, held)
    elif effort is not None and kind == "responses":
        reasoning = request.get("reasoning")
        request["reasoning"] = reasoning = reasoning if isinstance(reasoning, dict) else {}
        _lower(reasoning, "effort", effort, _over_effort, held, "reasoning.")
    if kind == "chat":
        _hold_chat_dialects(request, max_output, effort, thinking, held)
    thought = request.get("thinking")
    enabled = isinstance(thought, dict) and thought.get("type") == "enabled"
    if thinking is not None and kind == "messages" and enabled:
        _lower(thought, "budget_tokens", thinking, _over_count, held, "thinking.")
    return held


def _hold_chat_dialects(
    request: dict[str, Any], max_output: int | None, effort: str | None, thinking: int | None,
    held: list[str],
) -> None:  # fmt: skip
    """The reasoning fields OpenAI-compatible endpoints take in a chat call besides
    `reasoning_effort` (`reasoning: {effort, max_tokens}` as OpenRouter reads it, Anthropic's
    `thinking: {budget_tokens}` as its OpenAI-compatible endpoint does), held to the same
    ceilings: a harness adding them would otherwise get the reasoning the role withholds."""
    reasoning = request.get("reasoning")
    if isinstance(reasoning, dict):
        if effort is not None and "effort" in reasoning:
            _lower(reasoning, "effort", effort, _over_effort, held, "reasoning.")
        budget = thinking if thinking is not None else max_output
        if budget is not None and "max_tokens" in reasoning:
            _lower(reasoning, "max_tokens", budget, _over_count, held, "reasoning.")
    thought = request.get("thinking")
    budget = thinking if thinking is not None else max_output
    if isinstance(thought, dict) and budget is not None and "budget_tokens" in thought:
        _lower(thought, "budget_tokens", budget, _over_count, held, "thinking.")


def _lower(holder: dict, name: str, ceiling: Any, over: Any, held: list[str], at: str = "") -> None:
    asked = holder.get(name)
    if over(asked, ceiling):
        holder[name] = ceiling
        held.append(f"{at}{name}: {str(asked)[:40]} -> {ceiling}")


def _over_count(asked: Any, ceiling: int) -> bool:
    """More than the ceiling, or no count at all (a non-positive one the upstream refuses)."""
    return type(asked) is not int or asked > ceiling


def _over_effort(asked: Any, ceiling: str) -> bool:
    return asked not in EFFORTS or EFFORTS.index(asked) > EFFORTS.index(ceiling)
