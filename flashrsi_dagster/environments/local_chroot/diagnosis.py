"""What a failed command's output means in the local environment, in words a task author can
act on: the host's own tools stand in for the image, so `apt-get`, `pip` and `python` fail here
in ways whose own messages mislead ("are you root?" from apt, as root).
"""

from __future__ import annotations

import re

DOCKER = "run the task in Harbor's docker environment (benchmark.harbor_environment: docker)"

_CAUSES = (
    (
        re.compile(r"/var/lib/dpkg/lock|/var/lib/apt/lists|Unable to acquire the dpkg"),
        "apt cannot install packages in the local environment: /usr and dpkg's database are "
        f"the host's, shared read-only, so only what the host has installed is there; {DOCKER}",
    ),
    (
        re.compile(r"externally-managed-environment|--break-system-packages"),
        "pip cannot install into the host's Python, which Debian marks externally managed "
        "(PEP 668), and its /usr is shared read-only; install into a virtual environment "
        f"(python3 -m venv /opt/venv) or {DOCKER}",
    ),
    (
        re.compile(r"\bpython: (command )?not found|exec: \"?python\"?: .*not found"),
        "there is no `python` command: the host's system (standing in for the image) has only "
        f"`python3`; call python3, or {DOCKER} (python images provide `python`)",
    ),
)


def explain(output: str) -> str | None:
    """The cause behind a failed command's `output`, when it is one the local environment
    makes (each sentence once, in a fixed order); None otherwise."""
    causes = [cause for pattern, cause in _CAUSES if pattern.search(output)]
    return "; ".join(causes) or None
