"""Read a folder skill's instructions on demand; the system prompt only lists descriptions."""

from __future__ import annotations

from typing import Any

from runtime.context import Context
from runtime.tool_result import bound
from runtime.workspace import discover_skills, split_frontmatter

from tools.base import BaseTool, ToolError, string_arg


class ReadSkillTool(BaseTool):
    name = "read_skill"

    def _run(self, arguments: dict[str, Any], ctx: Context) -> str:
        name = string_arg(arguments, "name")
        try:
            # A context built by hand may carry no skills; the harness folder is the source.
            skills = ctx.skills or discover_skills(ctx.files_dir)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        skill = skills.get(name)
        if skill is None:
            available = ", ".join(sorted(skills)) or "none"
            raise ToolError(f"unknown skill {name!r}; available skills: {available}")
        try:
            _, body = split_frontmatter(skill.path.read_text(encoding="utf-8"))
        except ValueError as exc:  # edited since discovery
            raise ToolError(f"{skill.path.name} of {name!r} is malformed: {exc}") from None
        return bound(body.strip() + "\n", ctx.output_limit)
