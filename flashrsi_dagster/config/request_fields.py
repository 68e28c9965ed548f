"""Model-request fields the framework owns: `llm.extra_body` may not set them.

The model gateway checks or relies on some fields of every request (the model it allows, the
tools a run may offer, the stream it meters, the output limit it reserves caps by), and the
LLM client writes others from the conversation and the role's config. A value merged in from
`extra_body` would replace them: a `model` there made the gateway refuse every call (403).
The gateway reads its fields by these names, and the config refuses all of them in
`extra_body`, so the two lists cannot drift apart.
"""

from __future__ import annotations

MODEL_FIELD = "model"
TOOL_FIELDS = ("tools", "functions")
"""Where a request offers tools (checked against the run's permissions)."""
HOSTED_TOOL_FIELDS = ("mcp_servers", "web_search_options", "search_parameters")
"""Hosted network tools, refused to every run: Anthropic's remote MCP servers, and the
provider's web search asked for by a field rather than a tool (OpenAI chat's
`web_search_options`, xAI's `search_parameters`; red-team round 19)."""
WEB_PLUGINS = ("web",)
"""OpenRouter's `plugins` entries (by `id`) that search the web from its side."""
STREAM_FIELD, STREAM_OPTIONS_FIELD = "stream", "stream_options"
OUTPUT_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
"""The call's output limit, by which the gateway reserves a role's caps."""

_GATEWAY = "the model gateway checks it"
OWNED_REQUEST_FIELDS: dict[str, str] = {
    MODEL_FIELD: "the gateway admits only the role's model; set llm.model",
    **dict.fromkeys(TOOL_FIELDS, f"{_GATEWAY} against the role's permissions"),
    **dict.fromkeys(HOSTED_TOOL_FIELDS, f"{_GATEWAY}: hosted network tools are refused"),
    STREAM_FIELD: "the agent decides whether to stream and the gateway meters it",
    STREAM_OPTIONS_FIELD: "the gateway sets it to meter a stream",
    **dict.fromkeys(OUTPUT_LIMIT_FIELDS, f"{_GATEWAY} to reserve caps; set llm.max_tokens"),
    **dict.fromkeys(
        ("messages", "input", "instructions", "system", "prompt"),
        "the agent writes the conversation",
    ),
    "tool_choice": "the agent decides which tools the model may call",
    "temperature": "set llm.temperature",
    **dict.fromkeys(("reasoning", "reasoning_effort", "thinking"), "set llm.reasoning"),
}
"""Each owned field, and why (or where to set it instead)."""


def owned_field_problems(extra_body: dict[str, object]) -> list[str]:
    """One line per key of `extra_body` the framework owns; empty when it owns none."""
    problems = [
        f"`{key}` may not be set here: {OWNED_REQUEST_FIELDS[key]}"
        for key in extra_body
        if key in OWNED_REQUEST_FIELDS
    ]
    plugins = extra_body.get("plugins")
    if isinstance(plugins, list) and any(
        isinstance(p, dict) and p.get("id") in WEB_PLUGINS for p in plugins
    ):  # the gateway would refuse every call
        problems.append(f"`plugins`: {_GATEWAY}: a web plugin is a hosted network tool")
    return problems
