"""The POSIX shell snapshot: the login shell's environment, functions and aliases, captured
once per session into a file in the run's home, sourced before each shell command (so commands
need not start a login shell), and removed when the session ends.

Conditional restore: a command is wrapped only when the snapshot exists and the command is a
`bash`/`sh` `-c`/`-lc` script; any other argv runs as it is.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import subprocess
from pathlib import Path

SHELLS = {"bash", "sh", "/bin/bash", "/bin/sh", "/usr/bin/bash", "/usr/bin/sh"}
_SKIP = re.compile(r"^declare -x (PWD|OLDPWD|SHLVL|_|HOSTNAME)(=|$)")
"""Variables a snapshot must not carry from the capturing shell into a command."""
CAPTURE = "export -p; declare -f; alias -p"
CAPTURE_TIMEOUT = 10.0


def create(home: Path, session_id: str, cwd: Path, env: dict[str, str]) -> Path | None:
    """The snapshot file for this session, or None when the login shell cannot be captured
    (commands then run without one)."""
    folder = home / "shell_snapshots"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.sh"
    try:
        done = subprocess.run(
            ["bash", "-lc", CAPTURE],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=CAPTURE_TIMEOUT,
            start_new_session=True,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    kept = [line for line in done.stdout.splitlines() if not _SKIP.match(line)]
    path.write_text("# shell snapshot (login shell)\n" + "\n".join(kept) + "\n", encoding="utf-8")
    return path


def restore(argv: list[str], snapshot: Path | None) -> list[str]:
    """`argv` with the snapshot sourced first, when both allow it."""
    if snapshot is None or not snapshot.is_file() or len(argv) != 3:
        return argv
    shell, flag, script = argv
    if shell not in SHELLS or flag not in ("-c", "-lc"):
        return argv
    source = f". {shlex.quote(str(snapshot))} >/dev/null 2>&1"
    return ["bash", "-c", f"{source}\n{script}"]


def remove(snapshot: Path | None) -> None:
    if snapshot is not None:
        snapshot.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # another session's snapshot is still there
            snapshot.parent.rmdir()
