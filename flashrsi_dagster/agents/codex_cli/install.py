"""Where the Codex CLI is: the npm package the set-up installs, never a snapshot's file.

`make env` (the `codex` target) runs `npm install --prefix .tools/codex @openai/codex@<PINNED>`
where npm exists. The adapter runs the package's native binary directly (its `codex.js`
wrapper would need node inside the jail and only finds and starts that binary).
`FLASHRSI_CODEX_CLI` names another install prefix (the folder `npm install --prefix` was
given) for installs outside a checkout of this repository.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

PINNED = "0.169.0"
"""The `@openai/codex` version the set-up installs and the adapter was tested against."""
PREFIX_ENV = "FLASHRSI_CODEX_CLI"
DEFAULT_PREFIX = Path(__file__).resolve().parents[3] / ".tools" / "codex"
"""`.tools/codex` of the repository checkout holding this package (the Makefile's)."""
_TRIPLES = {"x86_64": "x86_64-unknown-linux-musl", "aarch64": "aarch64-unknown-linux-musl"}
_PLATFORM_PACKAGES = {"x86_64": "codex-linux-x64", "aarch64": "codex-linux-arm64"}


class CodexCLIMissing(RuntimeError):
    """The CLI is not installed where the adapter looks: the message says how to install it."""


@dataclass(frozen=True)
class CodexInstall:
    prefix: Path
    """The npm prefix: mounted read-only into every run's jail."""
    binary: Path
    """The native `codex` executable (a static binary: it needs nothing else in the jail)."""

    @property
    def tools_path(self) -> Path:
        """Helper programs the CLI ships (`rg`), put on the run's PATH."""
        return self.binary.parent.parent / "codex-path"


def prefix() -> Path:
    configured = os.environ.get(PREFIX_ENV)
    return Path(configured).expanduser().resolve() if configured else DEFAULT_PREFIX


def find_install() -> CodexInstall:
    """The installed CLI, or `CodexCLIMissing` naming where it was looked for."""
    root = prefix()
    machine = platform.machine()
    if platform.system() != "Linux" or machine not in _TRIPLES:
        raise CodexCLIMissing(f"type codex-cli runs on Linux x86_64/aarch64, not {machine}")
    package = root / "node_modules" / "@openai" / _PLATFORM_PACKAGES[machine]
    binary = package / "vendor" / _TRIPLES[machine] / "bin" / "codex"
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise CodexCLIMissing(
            f"the Codex CLI is not installed at {root} (looked for {binary}): run `make env` "
            f"where npm exists, or `npm install --prefix {root} @openai/codex@{PINNED}`, or "
            f"set {PREFIX_ENV} to the prefix of an install"
        )
    return CodexInstall(root, binary)
