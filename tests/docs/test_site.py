"""The documentation site builds strictly from the checkout: a broken link or anchor, a page
left out of `nav`, or a nav entry naming no page fails the suite, as `mkdocs build --strict`
fails it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import PATIENCE

ROOT = Path(__file__).resolve().parents[2]


def test_the_site_builds_strictly_with_no_warning(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        # Material's banner about its successor is advice, not a problem with the pages.
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )

    output = built.stdout + built.stderr
    assert built.returncode == 0, output
    assert "WARNING" not in output, output
    assert (tmp_path / "index.html").is_file()


def test_every_relative_link_in_the_readme_names_a_file_of_the_checkout():
    """The README is outside the site, so the strict build does not read its links."""
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\((?!https?://)([^)#]+)(?:#[^)]*)?\)", readme)

    assert targets
    assert [t for t in targets if not (ROOT / t).exists()] == []
