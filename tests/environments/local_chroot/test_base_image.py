"""Which FROM images the local environment honours: the host's own release, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.environments.local_chroot.base_image import (
    BaseImageRefused,
    HostSystem,
    check_base_image,
)
from flashrsi_dagster.environments.local_chroot.dockerfile import parse_dockerfile

DEBIAN_12 = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n'
DEBIAN_12 += "VERSION_CODENAME=bookworm\n"
UBUNTU_2404 = 'ID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\nVERSION_CODENAME=noble\n'


@pytest.mark.parametrize(
    ("os_release", "image", "honoured"),
    [
        (DEBIAN_12, "debian:bookworm-slim", True),
        (DEBIAN_12, "debian:12", True),
        (DEBIAN_12, "debian:12.8-slim", True),
        (DEBIAN_12, "docker.io/library/debian:bookworm@sha256:0123abcd", True),
        (DEBIAN_12, "debian:trixie-slim", False),
        (DEBIAN_12, "debian:13", False),
        (DEBIAN_12, "debian", False),  # latest moves
        (DEBIAN_12, "debian:latest", False),
        (DEBIAN_12, "python:3.11-slim-bookworm", False),
        (DEBIAN_12, "python:3.12-slim", False),
        (DEBIAN_12, "ubuntu:24.04", False),
        (DEBIAN_12, "registry.example.com:5000/debian:12", False),
        (UBUNTU_2404, "ubuntu:24.04", True),
        (UBUNTU_2404, "ubuntu:noble", True),
        (UBUNTU_2404, "ubuntu:22.04", False),
        (UBUNTU_2404, "debian:bookworm-slim", False),
    ],
)
def test_only_the_hosts_own_release_is_honoured(os_release: str, image: str, honoured: bool):
    assert HostSystem.read(os_release).honours(image) is honoured


def test_a_refusal_names_the_task_the_from_line_and_the_way_out(tmp_path: Path):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("# syntax=docker/dockerfile:1\nARG V=3.12\nFROM python:${V}-slim\n")
    recipe = parse_dockerfile(dockerfile)

    with pytest.raises(BaseImageRefused) as caught:
        check_base_image(recipe, "fix-git", HostSystem.read(DEBIAN_12))

    assert str(caught.value) == (
        f"task fix-git: {dockerfile}:3: FROM python:3.12-slim cannot be honoured by the local "
        "environment: it runs the host's own debian 12 (bookworm) system in place of an image, "
        "so it honours only FROM debian:12, debian:bookworm, debian:12-slim, "
        "debian:bookworm-slim; change the FROM line to one of those, or run it in Harbor's "
        "docker environment (benchmark.harbor_environment: docker), which builds the image"
    )
