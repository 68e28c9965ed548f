"""The MiniAgent tools, minimally, for driving the simulator worker in a real folder.

`shell` runs the command with `sh` in the folder; `editor` does view (as `cat -n`), create,
str_replace and insert. Every command and path the worker asks for is recorded.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

SHELL_TOOL = {
    "type": "function",
    "function": {
        "name": "shell",
        "description": "Run a shell command in the working directory.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}
EDITOR_TOOL = {
    "type": "function",
    "function": {
        "name": "editor",
        "description": "View, create and edit files.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.commands: list[str] = []
        self.paths: list[str] = []

    def run(self, name: str, arguments: dict[str, Any]) -> str:
        if name == "shell":
            self.commands.append(arguments["command"])
            done = subprocess.run(
                arguments["command"],
                shell=True,
                cwd=self.root,
                capture_output=True,
                text=True,
                timeout=10,
            )
            return done.stdout + done.stderr
        return self._edit(**arguments)

    def _edit(self, command: str, path: str, **arguments: Any) -> str:
        self.paths.append(path)
        target = (self.root / path).resolve()
        assert target.is_relative_to(self.root.resolve()), f"{path} is outside the workspace"
        if command == "create":
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(arguments["file_text"])
            return f"File created: {path}"
        if not target.exists():
            return f"Error: the path {path} does not exist."
        text = target.read_text()
        if command == "view":
            numbered = "\n".join(f"{i:6}\t{line}" for i, line in enumerate(text.splitlines(), 1))
            return f"Here's the result of running `cat -n` on {path}:\n{numbered}\n"
        if command == "str_replace":
            assert text.count(arguments["old_str"]) == 1, "old_str must occur exactly once"
            target.write_text(text.replace(arguments["old_str"], arguments["new_str"]))
            return f"The file {path} has been edited."
        if command == "insert":
            lines = text.splitlines()
            at = arguments["insert_line"]
            lines[at:at] = arguments["new_str"].splitlines()
            target.write_text("\n".join(lines) + "\n")
            return f"The file {path} has been edited."
        raise AssertionError(f"unknown editor command {command}")
