"""Which `FROM` images the local environment can honour: the host's own system, no other.

The local environment has no image to unpack: the host's `/usr`, `/etc`, `/bin` and `/lib`
stand in for it, read-only. That is true to the task only when the image *is* the host's
distribution release, so that what the task's Dockerfile, agent and tests expect of it
(its Python, its `apt` packages, where things live) is what they find. On a Debian 12 host
the honoured images are `debian:12`, `debian:bookworm`, a point release such as
`debian:12.8`, and the `-slim` variant of each (the host may have more installed than the
slim image: a task that relies on a tool being absent is rare; one that needs a tool the host
lacks fails naming it, and `apt-get` cannot add it here, see `diagnosis`); on an Ubuntu 24.04 host,
`ubuntu:24.04` and `ubuntu:noble`. A `docker.io/library/` prefix and an `@sha256:` digest
are allowed (the tag still names the release).

Everything else is refused before anything runs, naming the task, the `FROM` line and the way
out (Harbor's `docker` environment): another release or distribution, a moving tag
(`latest`), another registry, and language images such as `python:3.12-slim`, whose Python
in `/usr/local`, `pip` and `python` command the host's system does not have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from flashrsi_dagster.environments.local_chroot.dockerfile import DockerfileError, Recipe

OS_RELEASE = Path("/etc/os-release")
DOCKER_WAY_OUT = (
    "run it in Harbor's docker environment (benchmark.harbor_environment: docker), "
    "which builds the image"
)


class BaseImageRefused(DockerfileError):
    """A `FROM` image the host cannot stand in for (see the module docstring)."""

    def __init__(self, task: str, path: Path, line: int, message: str) -> None:
        super().__init__(path, line, message)
        self.args = (f"task {task}: {self}",)


@dataclass(frozen=True)
class HostSystem:
    """The host's distribution release, from `/etc/os-release`."""

    distro: str
    version: str
    codename: str

    @classmethod
    def read(cls, text: str | None = None) -> HostSystem:
        """From `text` (an os-release file's), default this host's `/etc/os-release`."""
        fields: dict[str, str] = {}
        source = OS_RELEASE.read_text() if text is None else text
        for line in source.splitlines():
            name, sep, value = line.partition("=")
            if sep:
                fields[name.strip()] = value.strip().strip("\"'")
        return cls(
            fields.get("ID", ""), fields.get("VERSION_ID", ""), fields.get("VERSION_CODENAME", "")
        )

    @property
    def describe(self) -> str:
        return f"{self.distro} {self.version} ({self.codename})".strip()

    def images(self) -> list[str]:
        """The `FROM` images this host stands in for, as a user would write them."""
        releases = [tag for tag in (self.version, self.codename) if tag]
        slim = [f"{tag}-slim" for tag in releases] if self.distro == "debian" else []
        return [f"{self.distro}:{tag}" for tag in [*releases, *slim]] if self.distro else []

    def honours(self, image: str) -> bool:
        name, tag = _name_and_tag(image)
        if name != self.distro or not tag or not self.distro:
            return False
        if self.distro == "debian":
            tag = tag.removesuffix("-slim")
            # A point release (12.8) is the same release as 12.
            point_release = re.fullmatch(rf"{re.escape(self.version)}(\.\d+)?", tag)
            return tag == self.codename or point_release is not None
        return tag in (self.version, self.codename)


def _name_and_tag(image: str) -> tuple[str, str]:
    """`docker.io/library/debian:12-slim@sha256:...` -> ("debian", "12-slim"); a name from
    another registry keeps its registry (and so matches no host)."""
    reference = image.split("@", 1)[0]
    for prefix in ("docker.io/library/", "index.docker.io/library/", "library/"):
        reference = reference.removeprefix(prefix)
    name, _, tag = reference.rpartition(":") if ":" in reference else (reference, "", "")
    if "/" in tag:  # a registry port, not a tag: `host:5000/name`
        return reference, ""
    return name, tag


def refusal(image: str, host: HostSystem) -> str | None:
    """Why the local environment cannot honour `FROM image` on `host`, or None."""
    if host.honours(image):
        return None
    honoured = ", ".join(host.images()) or "none (unknown host system)"
    return (
        f"FROM {image or '(none)'} cannot be honoured by the local environment: it runs the "
        f"host's own {host.describe} system in place of an image, so it honours only FROM "
        f"{honoured}; change the FROM line to one of those, or {DOCKER_WAY_OUT}"
    )


def check_base_image(recipe: Recipe, task: str, host: HostSystem | None = None) -> None:
    """Raise `BaseImageRefused`, naming `task` and the FROM line, unless `host` (default:
    this machine) can stand in for the recipe's base image."""
    reason = refusal(recipe.base_image, host or HostSystem.read())
    if reason is not None:
        raise BaseImageRefused(task, recipe.path, recipe.base_image_line, reason)
