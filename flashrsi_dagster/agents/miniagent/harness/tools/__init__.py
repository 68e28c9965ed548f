"""The tool registry: short names to classes, imported only when a run enables them."""

from __future__ import annotations

import importlib

from tools.base import Tool

__all__ = ["TOOLS", "Tool", "build_tools"]

TOOLS: dict[str, str] = {
    "shell": "shell:ShellTool",
    "editor": "editor:EditorTool",
    "read_skill": "read_skill:ReadSkillTool",
    "web_fetch": "web_fetch:WebFetchTool",
}
"""Tool name -> `module:Class` inside this package."""


def build_tools(names: list[str]) -> dict[str, Tool]:
    unknown = [name for name in names if name not in TOOLS]
    if unknown:
        raise ValueError(
            f"unknown tool(s) {', '.join(map(repr, unknown))}; known: {', '.join(TOOLS)}"
        )
    tools: dict[str, Tool] = {}
    for name in names:
        module, cls = TOOLS[name].split(":")
        tools[name] = getattr(importlib.import_module(f".{module}", __name__), cls)()
    return tools
