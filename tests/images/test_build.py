"""The code location's image: built only from a checkout; on this machine's base, the
interpreter inside is this one, at the same path, with its extension modules' libraries."""

from __future__ import annotations

import subprocess
import sys

import pytest

from flashrsi_dagster.images.base import base_tag
from flashrsi_dagster.images.build import build_image
from flashrsi_dagster.images.engine import ImageError


def test_an_image_is_built_only_from_a_checkout_with_a_dockerfile_and_a_lock(tmp_path):
    (tmp_path / "uv.lock").write_text("")
    with pytest.raises(ImageError, match=r"no Dockerfile: build the image from a checkout"):
        build_image("flashrsi-dagster:nowhere", context=tmp_path)


@pytest.mark.slow
def test_the_image_runs_this_interpreter_and_the_locked_code_location(code_image):
    script = (
        "import sys, ssl, sqlite3, ctypes, flashrsi_dagster.definitions as d; "
        "print(sys.version, sys.base_prefix, type(d.defs()).__name__, sep='|')"
    )
    command = ["docker", "run", "--rm", "--network", "none", code_image, "python", "-c", script]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().split("|") == [sys.version, sys.base_prefix, "Definitions"]
    inspect = ["docker", "image", "inspect", "--format", "{{.Id}}", base_tag()]
    assert subprocess.run(inspect, capture_output=True).returncode == 0  # made once, kept
