"""The code location's image from a checkout: the Dockerfile at its root, on a given base."""

from __future__ import annotations

from pathlib import Path

from flashrsi_dagster.images.engine import ImageError, docker

DEFAULT_IMAGE = "flashrsi-dagster:local"
CHECKOUT = Path(__file__).resolve().parents[2]
"""The repository this package was imported from (an installed wheel has no Dockerfile)."""


def build_image(tag: str = DEFAULT_IMAGE, *, base: str | None = None, context: Path = CHECKOUT):
    """`docker build --network host` of `context` (its Dockerfile and uv.lock) as `tag`;
    `base`: the Dockerfile's BASE (its default, `python:3.12-slim-bookworm`, when None)."""
    missing = [name for name in ("Dockerfile", "uv.lock") if not (context / name).is_file()]
    if missing:
        raise ImageError(
            f"{context}: no {' or '.join(missing)}: build the image from a checkout of the "
            "FlashRSI repository"
        )
    arguments = ["build", "--network", "host", "--tag", tag]
    if base is not None:
        arguments += ["--build-arg", f"BASE={base}"]
    docker(*arguments, str(context))
    return tag
