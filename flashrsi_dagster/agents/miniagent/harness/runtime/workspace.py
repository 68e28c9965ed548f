"""The harness folder as a run sees it: agent.yaml, skills, the system prompt and the tools.

<files_dir>/
  agent.yaml               prompt, tools, skills (flat .md files to inline), limits
  prompts/system.md        the system prompt (its path is set in agent.yaml)
  skills/<name>/SKILL.md   folder skill: description in the prompt, body via read_skill
  skills/<name>.md         flat skill: inlined in full when agent.yaml lists it
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from tools import TOOLS, Tool, build_tools

from runtime.context import Context, Skill

AGENT_YAML = "agent.yaml"
LIMITS: dict[str, type] = {"shell_timeout": float, "output_limit": int}
"""Limit name -> type; these are the Context fields agent.yaml and callers may set."""
SKILL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # safe inside a "- name: text" line
READ_SKILL = "read_skill"


@dataclass(frozen=True)
class AgentSpec:
    prompt: str
    """Path of the system prompt file, relative to the harness folder."""
    tools: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    """Flat skills to inline: `style`, `style.md` or `skills/style.md`."""
    limits: dict[str, Any] = field(default_factory=dict)


def load_agent_yaml(files_dir: Path) -> AgentSpec:
    path = Path(files_dir) / AGENT_YAML
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot be read as YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: must be a mapping with keys prompt, tools, skills, limits")
    unknown = sorted(set(data) - {"prompt", "tools", "skills", "limits"})
    if unknown:
        raise ValueError(
            f"{path}: unknown key(s) {unknown}; allowed: prompt, tools, skills, limits"
        )
    prompt = data.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        raise ValueError(f"{path}: 'prompt' must be the path of the system prompt file")
    if not _inside(Path(files_dir), prompt, f"{path}: 'prompt'").is_file():
        raise ValueError(f"{path}: 'prompt': no file {prompt!r} in {files_dir}")
    tools = _string_list(data.get("tools", []), path, "tools")
    for name in tools:
        if name not in TOOLS:
            raise ValueError(f"{path}: 'tools': unknown tool {name!r}; known: {', '.join(TOOLS)}")
    if len(set(tools)) != len(tools):
        raise ValueError(f"{path}: 'tools' lists a tool twice: {tools}")
    limits = {} if data.get("limits") is None else data["limits"]
    if not isinstance(limits, dict):
        raise ValueError(f"{path}: 'limits' must be a mapping")
    return AgentSpec(
        prompt=prompt,
        tools=tools,
        skills=_string_list(data.get("skills", []), path, "skills"),
        limits=check_limits(limits, f"{path}: 'limits'"),
    )


def check_limits(limits: dict[str, Any], where: str) -> dict[str, Any]:
    checked = {}
    for key, value in limits.items():
        if key not in LIMITS:
            raise ValueError(f"{where}: unknown limit {key!r}; known: {', '.join(LIMITS)}")
        kind = (int, float) if LIMITS[key] is float else (int,)
        if isinstance(value, bool) or not isinstance(value, kind) or value <= 0:
            raise ValueError(f"{where}: {key!r} must be a positive {LIMITS[key].__name__}")
        checked[key] = LIMITS[key](value)
    return checked


def _string_list(value: Any, path: Path, key: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{path}: {key!r} must be a list of names")
    return list(value)


def _inside(root: Path, rel: str, where: str) -> Path:
    """`rel` under `root`; ValueError when it leads outside (agent.yaml is not a way out)."""
    path = (root / rel).resolve()
    if not path.is_relative_to(root.resolve()):
        raise ValueError(f"{where}: {rel!r} is outside the harness folder {root}")
    return path


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """(metadata, body) of a Markdown file that may open with a `---` YAML `---` block.

    ValueError when the block is not closed or not a YAML mapping.
    """
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            try:
                meta = yaml.safe_load("".join(lines[1:i])) or {}
            except yaml.YAMLError as exc:
                raise ValueError(f"the frontmatter is not valid YAML: {exc}") from None
            if not isinstance(meta, dict):
                raise ValueError("the frontmatter is not a YAML mapping")
            return meta, "".join(lines[i + 1 :])
    raise ValueError("the frontmatter opened with '---' is never closed")


def discover_skills(files_dir: Path) -> dict[str, Skill]:
    """Folder skills `skills/<name>/SKILL.md`, by name; folders without SKILL.md are ignored."""
    skills = {}
    folder = Path(files_dir) / "skills"
    for path in sorted(folder.glob("*/SKILL.md")) if folder.is_dir() else []:
        skill = _load_skill(path)
        flat = folder / f"{skill.name}.md"
        if flat.exists():
            raise ValueError(f"skill {skill.name!r} is both a folder ({path}) and a file ({flat})")
        skills[skill.name] = skill
    return skills


def _load_skill(path: Path) -> Skill:
    name = path.parent.name
    if not SKILL_NAME.fullmatch(name):
        raise ValueError(f"{path}: skill folder name {name!r} must match {SKILL_NAME.pattern}")
    try:
        meta, _ = split_frontmatter(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        raise ValueError(f"{path}: the frontmatter needs a 'description' (text)")
    if meta.get("name", name) != name:
        raise ValueError(f"{path}: frontmatter name {meta['name']!r} differs from folder {name!r}")
    # One line, so the prompt's "- name: description" list stays parseable.
    return Skill(name=name, description=" ".join(description.split()), path=path)


def flat_skills(files_dir: Path, spec: AgentSpec) -> dict[str, Path]:
    """The flat skills agent.yaml lists, by name (the file's stem)."""
    found: dict[str, Path] = {}
    where = f"{Path(files_dir) / AGENT_YAML}: 'skills'"
    for entry in spec.skills:
        rel = entry if "/" in entry else f"skills/{entry}"
        rel = rel if rel.endswith(".md") else f"{rel}.md"
        path = _inside(Path(files_dir), rel, where)
        if not path.is_file():
            raise ValueError(f"{where}: {entry!r} is not a file ({path})")
        if path.stem in found:
            raise ValueError(f"{where}: two entries named {path.stem!r}")
        found[path.stem] = path
    return found


def enabled_tools(spec: AgentSpec, skills: dict[str, Skill]) -> list[str]:
    """agent.yaml's tools, plus read_skill while any folder skill exists."""
    if skills and READ_SKILL not in spec.tools:
        return [*spec.tools, READ_SKILL]
    return list(spec.tools)


def system_prompt(files_dir: Path, spec: AgentSpec, skills: dict[str, Skill]) -> str:
    parts = [(Path(files_dir) / spec.prompt).read_text(encoding="utf-8").strip()]
    for name, path in flat_skills(files_dir, spec).items():
        if name in skills:
            raise ValueError(
                f"skill {name!r} is both a folder ({skills[name].path}) and a file ({path})"
            )
        parts.append(f"## Skill: {name}\n\n{path.read_text(encoding='utf-8').strip()}")
    if skills:
        lines = [f"- {name}: {skills[name].description}" for name in sorted(skills)]
        parts.append(
            "## Skills\nCall read_skill with a skill's name to read it before relying on it.\n"
            + "\n".join(lines)
        )
    return "\n\n".join(parts) + "\n"


def load_workspace(
    files_dir: Path, working_dir: Path, **limits: Any
) -> tuple[Context, str, dict[str, Tool]]:
    """The context, system prompt and tools of one run; `limits` override agent.yaml's."""
    files_dir, working_dir = Path(files_dir).resolve(), Path(working_dir).resolve()
    spec = load_agent_yaml(files_dir)
    overrides = {k: v for k, v in limits.items() if v is not None}
    merged = {**spec.limits, **check_limits(overrides, "load_workspace limits")}
    skills = discover_skills(files_dir)
    prompt = system_prompt(files_dir, spec, skills)
    tools = build_tools(enabled_tools(spec, skills))
    context = Context(working_dir=working_dir, files_dir=files_dir, skills=skills, **merged)
    return context, prompt, tools
