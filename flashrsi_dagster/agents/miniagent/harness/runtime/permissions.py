"""What the run's role permits, applied to the tools it is offered.

- `edit: false`: the editor is offered with `view` only (the jail also mounts the working
  folder read-only: the kernel refuses any write, by a tool or by a shell command);
- `shell: false`: no `shell` tool;
- `deny_tools`: those tools are not offered;
- the web tool is offered only when the run has the web (`web.enabled`).

The adapter protects this file and checks the run's tool calls against the same permissions
afterwards (a harness that offers a withheld tool anyway fails the run).
"""

from __future__ import annotations

import copy
from typing import Any

from tools import Tool, build_tools

from runtime.context import Context

WEB_TOOLS = ("web_fetch",)


def permitted_tools(
    tools: dict[str, Tool], ctx: Context, permissions: dict[str, Any], web: dict[str, Any]
) -> dict[str, Tool]:
    """The tools this run is offered, by name."""
    tools = dict(tools)
    if web.get("enabled"):
        tools.update(build_tools([name for name in WEB_TOOLS if name not in tools]))
    else:
        for name in WEB_TOOLS:
            tools.pop(name, None)
    if permissions.get("shell") is False:
        tools.pop("shell", None)
    for name in permissions.get("deny_tools") or ():
        tools.pop(name, None)
    if permissions.get("edit") is False:
        ctx.read_only = True
        if "editor" in tools:
            tools["editor"] = _view_only(tools["editor"])
    return tools


def _view_only(editor: Tool) -> Tool:
    """The editor, its schema offering `view` alone (its `run` refuses the rest)."""
    editor.schema = copy.deepcopy(editor.schema)
    parameters = editor.schema.get("parameters", {}).get("properties", {})
    if "command" in parameters:
        parameters["command"]["enum"] = ["view"]
    editor.schema["description"] = (
        "View files in the task's working directory (this run may not change them): a file "
        "shows numbered lines (optionally only view_range); a folder lists its entries."
    )
    for key in ("file_text", "old_str", "new_str", "insert_line"):
        parameters.pop(key, None)
    return editor
