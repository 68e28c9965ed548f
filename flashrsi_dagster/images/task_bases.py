"""Base images Harbor tasks name in `FROM`, made here where no registry is reachable: each
from its distribution's own packages (`debootstrap --variant=minbase`), carrying this machine's
trust (its extra CA certificates, where `update-ca-certificates` keeps them, and `/etc/pip.conf`)
so that a task's Dockerfile can `apt-get install` and `pip install` through the proxy here.

`python:3.12-slim` is the project's base (`base.py`: bookworm with this machine's CPython
3.12 copied in) with `python` and `pip` on PATH, as the official image has them. On a machine
that reaches Docker Hub, none of this is needed: the registry's images are pulled as usual.

Made once per engine: an image the engine has already is kept (its data root is the cache)."""

from __future__ import annotations

import shutil
import sys
import sysconfig
from pathlib import Path

from flashrsi_dagster.images.base import ensure_base_image, import_rootfs
from flashrsi_dagster.images.engine import ImageError, docker, has_image, run
from flashrsi_dagster.scratch import scratch_dir

DEBIAN_MIRROR = "http://deb.debian.org/debian"
UBUNTU_MIRROR = "https://archive.ubuntu.com/ubuntu"
"""Over HTTPS: Debian has no Ubuntu keyring package to check the Release file's signature with,
so the transport vouches for what debootstrap fetches (apt inside checks with Ubuntu's keys)."""
TRUST = ("usr/local/share/ca-certificates", "etc/ssl/certs/ca-certificates.crt", "etc/pip.conf")
"""This machine's trust, copied in where present."""
PYCACHE = shutil.ignore_patterns("__pycache__")
PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

_DEBOOTSTRAPPED = {
    # tag: (suite, mirror, debootstrap's script for the suite, extra arguments)
    "debian:bookworm-slim": ("bookworm", DEBIAN_MIRROR, None, ()),
    # bookworm's debootstrap predates noble; gutsy's script serves every later Ubuntu
    "ubuntu:24.04": ("noble", UBUNTU_MIRROR, "gutsy", ("--no-check-gpg",)),
}
PYTHON_SLIM = "python:3.12-slim"
STAND_INS = (*_DEBOOTSTRAPPED, PYTHON_SLIM)


def ensure_task_base_images(tags: tuple[str, ...] = STAND_INS) -> list[str]:
    """`tags` (of `STAND_INS`), each made first if the engine lacks it (root, debootstrap and
    the distributions' archives needed; a minute or two each, once)."""
    unknown = sorted(set(tags) - set(STAND_INS))
    if unknown:
        raise ImageError(f"no recipe for base image(s) {unknown}; made here: {list(STAND_INS)}")
    for tag in tags:
        if has_image(tag):
            continue
        if tag == PYTHON_SLIM:
            _python_slim(tag)
        else:
            _debootstrapped(tag, *_DEBOOTSTRAPPED[tag])
    return list(tags)


def _debootstrapped(tag: str, suite: str, mirror: str, script: str | None, extra) -> None:
    if shutil.which("debootstrap") is None:
        raise ImageError(f"debootstrap: not installed (apt-get install debootstrap): no {tag}")
    with scratch_dir("rootfs-") as rootfs:
        command = ["debootstrap", "--variant=minbase", *extra, suite, str(rootfs), mirror]
        if script:
            command.append(f"/usr/share/debootstrap/scripts/{script}")
        run(command, timeout=1200)
        _add_trust(rootfs)
        import_rootfs(rootfs, tag, f"ENV {PATH}", 'CMD ["bash"]')


def _python_slim(tag: str) -> None:
    prefix = Path(sys.base_prefix) / "bin"
    # the base leaves ensurepip out; `python3 -m venv` needs it, as the official image has it
    ensurepip = Path(sysconfig.get_path("stdlib")) / "ensurepip"
    with scratch_dir("python-slim-") as context:
        _add_trust(context)
        shutil.copytree(ensurepip, context / "ensurepip", ignore=PYCACHE)
        copies = [f"COPY {part} /{part}\n" for part in TRUST if (context / part).exists()]
        copies.append(f"COPY ensurepip {ensurepip}\n")
        (context / "Dockerfile").write_text(
            f"FROM {ensure_base_image()}\n"
            + "".join(copies)
            + f"RUN ln -s {prefix}/python3 /usr/local/bin/python"
            f" && ln -s {prefix}/pip3 /usr/local/bin/pip3"
            f" && ln -s {prefix}/pip3 /usr/local/bin/pip\n"
            f"ENV {PATH}\n"
            'CMD ["python3"]\n'
        )
        docker("build", "--network", "host", "-t", tag, str(context))


def _add_trust(rootfs: Path) -> None:
    for part in TRUST:
        source = Path("/") / part
        if source.is_dir():
            shutil.copytree(source, rootfs / part, dirs_exist_ok=True)
        elif source.is_file():
            (rootfs / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, rootfs / part)


if __name__ == "__main__":
    try:
        print("\n".join(ensure_task_base_images()))
    except ImageError as exc:
        sys.exit(f"error: {exc}")
