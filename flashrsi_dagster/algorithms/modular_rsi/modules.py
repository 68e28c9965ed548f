"""ModularRSI's modules: the five runtime mechanisms or the three native extensions, each
mapped to exact files of the seed snapshot.

The names stand for functional responsibilities; the files come from the harness's own
layout, and modules may share one. The framework enforces the file range (`changed_paths()`);
the responsibility inside a shared file is the prompts' and the review's to hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath

RUNTIME_MODULES = (
    "agent_loop",
    "tool_use",
    "observation_management",
    "context_management",
    "task_completion_detection",
)
EXTENSION_MODULES = ("prompt", "skill", "hook")

RESPONSIBILITIES = {
    "agent_loop": "how the agent alternates model calls and actions until it stops",
    "tool_use": "which tools the agent has and how their calls are made and executed",
    "observation_management": "how tool results and errors are turned into what the model sees",
    "context_management": "what the model is given each turn: the system prompt, the history "
    "and how it is kept within bounds",
    "task_completion_detection": "how the agent decides the task is done and what it answers",
    "prompt": "the instructions added to the agent's system prompt",
    "skill": "the skills the agent can read while it works",
    "hook": "the hooks that run around the agent's actions",
}
INTEGRATION = "integration"
"""The candidate slot of the merge of the branches (not a module name)."""


def module_problems(modules: Mapping[str, list[str]]) -> list[str]:
    """What is wrong with `algorithm.modules` on its own (no files read): one line each."""
    names = set(modules)
    problems = []
    for family in (RUNTIME_MODULES, EXTENSION_MODULES):
        if names & set(family) and names != set(family):
            missing = [m for m in family if m not in names]
            extra = sorted(names - set(family))
            detail = "; ".join(
                part
                for part in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"not of this set: {', '.join(extra)}" if extra else "",
                )
                if part
            )
            problems.append(
                f"algorithm.modules: declare exactly the five runtime modules "
                f"({', '.join(RUNTIME_MODULES)}) or exactly the three extension modules "
                f"({', '.join(EXTENSION_MODULES)}); {detail}"
            )
            return problems
    if not names & {*RUNTIME_MODULES, *EXTENSION_MODULES}:
        problems.append(
            f"algorithm.modules: unknown module(s) {', '.join(sorted(names)) or '(none)'}; "
            f"declare exactly {', '.join(RUNTIME_MODULES)} or exactly "
            f"{', '.join(EXTENSION_MODULES)}"
        )
    for name, files in modules.items():
        problems += [f"algorithm.modules.{name}: {p}" for p in _file_problems(files)]
    return problems


def _file_problems(files: list[str]) -> list[str]:
    if not files:
        return ["empty: list at least one file of the harness"]
    problems = []
    for i, entry in enumerate(files):
        path = PurePosixPath(entry)
        if "::" in entry:
            problems.append(
                f"[{i}] {entry!r}: the `file.py::function` form is retired; name whole files "
                "(a module may edit anything in its files)"
            )
        elif path.is_absolute() or ".." in path.parts or entry != path.as_posix() or not entry:
            problems.append(
                f"[{i}] {entry!r}: expected a relative path inside the harness, "
                "written with `/` and without `..`"
            )
        elif any(ch in entry for ch in "*?["):
            problems.append(f"[{i}] {entry!r}: expected an exact file path, not a pattern")
    return problems


def missing_files(modules: Mapping[str, list[str]], harness: Path) -> list[str]:
    """Module files that are not regular files of the harness folder: one line each."""
    problems = []
    for name, files in modules.items():
        for i, entry in enumerate(files):
            path = harness / entry
            if path.is_symlink() or not path.is_file():
                problems.append(
                    f"algorithm.modules.{name}[{i}]: {entry} is not a file of the harness "
                    f"({harness}); module files must exist in the seed snapshot"
                )
    return problems


def all_files(modules: Mapping[str, list[str]]) -> tuple[str, ...]:
    """Every module's files, once each, in declaration order (the integration's range)."""
    return tuple(dict.fromkeys(f for files in modules.values() for f in files))


def ordered(modules: Mapping[str, list[str]]) -> tuple[str, ...]:
    """The declared modules in their family's canonical order (whatever the YAML's order):
    branches run in this order, and partitions list them so."""
    return tuple(m for m in (*RUNTIME_MODULES, *EXTENSION_MODULES) if m in modules)
