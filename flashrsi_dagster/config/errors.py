"""Config errors that name the file, the key path, the line, and what was expected."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    key_path: str
    """Dotted path such as `algorithm.worker.llm.model`; empty for the whole file."""
    message: str
    line: int | None = None
    override: str | None = None
    """The command-line override that set this key, if one did."""

    def render(self) -> str:
        where = self.key_path or "<config>"
        if self.override:
            where += f" (set by {self.override})"
        elif self.line is not None:
            where += f" (line {self.line})"
        return f"{where}: {self.message}"


class ConfigError(ValueError):
    """One or more problems with an experiment config; `str()` lists them all."""

    def __init__(self, source: Path | str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        body = "\n".join(f"  {problem.render()}" for problem in problems)
        super().__init__(f"{source}: invalid config\n{body}")
