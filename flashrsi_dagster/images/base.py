"""A base image where no registry is reachable: Debian bookworm from Debian's own packages
(`debootstrap --variant=minbase`) with this machine's Python interpreter copied in at the same
path, and its trusted certificates: the code location's image then needs nothing from
python.org or a registry.

Made once per engine: the tag names the interpreter's version, and an engine that has it
already is not asked again (the engine's data root is the cache)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from flashrsi_dagster.images.engine import ImageError, docker, has_image, run
from flashrsi_dagster.scratch import scratch_dir

SUITE = "bookworm"
PACKAGES = (
    # git: snapshot stores are git repositories; bubblewrap: every agent's jail
    "git", "bubblewrap", "ca-certificates",
    # what the interpreter's own extension modules link against (ssl, sqlite3, ctypes, ...)
    "libssl3", "libsqlite3-0", "libffi8", "libreadline8", "libncursesw6", "libnsl2", "libuuid1",
)  # fmt: skip
CERTIFICATES = Path("/etc/ssl/certs/ca-certificates.crt")
LEFT_OUT = shutil.ignore_patterns("test", "idlelib", "tkinter", "turtledemo", "ensurepip")
"""Parts of the standard library a code location never imports (~140 MB of 300)."""


def base_tag() -> str:
    return f"flashrsi-base:{SUITE}-python{platform.python_version()}"


def ensure_base_image() -> str:
    """The base image's tag, made first if the engine does not have it (root, debootstrap and
    Debian's package mirror needed; about a minute)."""
    tag = base_tag()
    if has_image(tag):
        return tag
    if shutil.which("debootstrap") is None:
        raise ImageError("debootstrap: not installed (apt-get install debootstrap): no base image")
    with scratch_dir("rootfs-") as rootfs:
        include = f"--include={','.join(PACKAGES)}"
        run(["debootstrap", "--variant=minbase", include, SUITE, str(rootfs)], timeout=1200)
        _add_interpreter(rootfs, Path(sys.base_prefix))
        # this machine's trust: where a proxy intercepts TLS, its CA is in the host's bundle
        shutil.copyfile(CERTIFICATES, rootfs / CERTIFICATES.relative_to("/"))
        import_rootfs(rootfs, tag)
    return tag


def import_rootfs(rootfs: Path, tag: str, *changes: str) -> None:
    """The folder `rootfs` as image `tag` (apt's caches left out); `changes` are Dockerfile
    instructions (`ENV ...`, `CMD ...`) set on it."""
    for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
        shutil.rmtree(rootfs / cache, ignore_errors=True)
        (rootfs / cache / "partial").mkdir(parents=True)  # apt wants them there
    options = [arg for change in ("ENV LANG=C.UTF-8", *changes) for arg in ("--change", change)]
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    try:
        docker("import", *options, "-", tag, stdin=tar.stdout)
    finally:
        tar.stdout.close()  # type: ignore[union-attr]
        tar.wait()


def _add_interpreter(rootfs: Path, prefix: Path) -> None:
    """`prefix` (this interpreter's installation) at the same path inside `rootfs`, its
    `python3.12` and `python3` on the image's PATH."""
    inside = rootfs / prefix.relative_to("/")
    shutil.copytree(prefix, inside, symlinks=True, ignore=LEFT_OUT)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for name in (version, "python3"):
        link = rootfs / "usr/local/bin" / name
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(prefix / "bin" / version, link)
