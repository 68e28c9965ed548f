"""The fixed editing tasks: the files each starts from, its instruction, the files the host
expects after it. Small on purpose: one call of an editing tool each, checked by the host."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from flashrsi_dagster.algorithms.editing_check import markers


@dataclass(frozen=True)
class EditingTask:
    name: str
    given: Mapping[str, str]
    """Relative path -> the text the scratch folder starts with."""
    instruction: str
    expected: Mapping[str, str]
    """Relative path -> the text the host expects afterwards; every other file unchanged."""

    def verify(self, folder: Path) -> str | None:
        """Why the folder is not as expected (the first difference), or None."""
        files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
        wanted = {**self.given, **self.expected}
        if extra := sorted(files - set(wanted)):
            return f"unexpected file(s): {', '.join(extra)}"
        for path, text in sorted(wanted.items()):
            target = folder / path
            if not target.is_file():
                return f"{path} is missing"
            found = target.read_bytes().decode("utf-8", errors="replace")
            if found != text:
                return f"{path} differs from the expected text ({len(found)} vs {len(text)} chars)"
        return None


def _lines(*lines: str) -> str:
    return "".join(line + "\n" for line in lines)


SETTINGS = _lines("# settings", "colour = red", "size = 3", "mode = fast")
FRUIT = _lines("apple", "cherry", "damson")
GREETING = _lines("Hello from the editing check.", "Second line.")

TASKS: tuple[EditingTask, ...] = (
    EditingTask(
        name="replace_line",
        given={"settings.ini": SETTINGS},
        instruction=(
            "Replace one line of a file and change nothing else.\n"
            f"{markers.CHECK} replace_line\n{markers.FILE} settings.ini\n"
            f"{markers.FIND} colour = red\n{markers.REPLACE} colour = blue\n"
        ),
        expected={"settings.ini": SETTINGS.replace("colour = red", "colour = blue")},
    ),
    EditingTask(
        name="create_file",
        given={},
        instruction=(
            "Create a file with exactly the given content (every line ends with a newline).\n"
            f"{markers.CHECK} create_file\n{markers.FILE} notes/greeting.txt\n"
            f"{markers.CONTENT}\n{GREETING}"
        ),
        expected={"notes/greeting.txt": GREETING},
    ),
    EditingTask(
        name="insert_after",
        given={"fruit.txt": FRUIT},
        instruction=(
            "Insert one line after a given line and change nothing else.\n"
            f"{markers.CHECK} insert_after\n{markers.FILE} fruit.txt\n"
            f"{markers.AFTER} apple\n{markers.INSERT} banana\n"
        ),
        expected={"fruit.txt": _lines("apple", "banana", "cherry", "damson")},
    ),
)
