"""What the model is told before the task: the core's base prompt and the home's AGENTS.md as
instructions, the skills it may read, and the project's own AGENTS.md found in the cwd.

Only the run's home (`CODEX_HOME`, a copy of the snapshot) and the task's cwd are read: never
the host's `~/.codex`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

BASE_PROMPT = Path(__file__).with_name("prompt.md")
PROJECT_SKILL_DIRS = (".agents/skills", ".codex/skills")
MAX_SKILLS = 100


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: Path
    origin: str  # "home", "plugin:<name>" or "project"


def instructions(home: Path, skills: list[Skill]) -> str:
    parts = [BASE_PROMPT.read_text(encoding="utf-8").strip()]
    agents = home / "AGENTS.md"
    if agents.is_file() and agents.read_text(encoding="utf-8").strip():
        parts.append(agents.read_text(encoding="utf-8").strip())
    if skills:
        lines = [
            "## Skills",
            "Read a skill's SKILL.md (e.g. `cat <file>` with the shell tool) before using it.",
        ]
        lines += [f"- {s.name}: {s.description} (file: {s.path})" for s in skills]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def project_doc(cwd: Path, limit: int) -> str | None:
    """The project's AGENTS.md (task input), cut at `limit` bytes."""
    path = cwd / "AGENTS.md"
    if not path.is_file():
        return None
    text = path.read_bytes()[:limit].decode(errors="replace").strip()
    return f"# AGENTS.md instructions for {cwd}\n\n{text}" if text else None


def skills(home: Path, plugins: tuple[str, ...], cwd: Path) -> list[Skill]:
    found = _skills_in(home / "skills", "home", "")
    for plugin in plugins:
        found += _skills_in(
            home / "plugins" / "cache" / plugin / "skills", f"plugin:{plugin}", f"{plugin}:"
        )
    for folder in PROJECT_SKILL_DIRS:
        found += _skills_in(cwd / folder, "project", "")
    return found[:MAX_SKILLS]


def _skills_in(folder: Path, origin: str, prefix: str) -> list[Skill]:
    if not folder.is_dir():
        return []
    found = []
    for skill_md in sorted(folder.glob("*/SKILL.md")):
        meta = _front_matter(skill_md.read_text(encoding="utf-8", errors="replace"))
        name = str(meta.get("name") or skill_md.parent.name)
        description = " ".join(str(meta.get("description") or "").split()) or "(no description)"
        found.append(Skill(prefix + name, description, skill_md, origin))
    return found


def _front_matter(text: str) -> dict:
    if not text.startswith("---"):
        return {}
    head, _, _ = text[3:].partition("\n---")
    try:
        data = yaml.safe_load(head)
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}
