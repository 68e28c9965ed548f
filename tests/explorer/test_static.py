"""The page's vendored libraries are the versions the Makefile pins (`make vendor` copies
them from npm), each with its licence beside it, and the page loads every one."""

from __future__ import annotations

import re
from pathlib import Path

from flashrsi_dagster.explorer.server import STATIC

MAKEFILE = Path(__file__).parents[2] / "Makefile"
VENDORED = {  # file: (the Makefile's version variable, how the file states its version)
    "d3-hierarchy.min.js": ("D3_HIERARCHY_VERSION", r"d3-hierarchy/ v([\d.]+)"),
    "uPlot.iife.min.js": ("UPLOT_VERSION", r"uPlot \(v([\d.]+)\)"),
    "highlight.min.js": ("HIGHLIGHT_VERSION", r"Highlight\.js v([\d.]+)"),
}


def test_each_vendored_library_is_the_pinned_version_with_its_licence():
    pins = dict(re.findall(r"^(\w+_VERSION) := (\S+)$", MAKEFILE.read_text(), re.M))
    for name, (variable, stated) in VENDORED.items():
        head = (STATIC / "vendor" / name).read_text(encoding="utf-8")[:300]
        assert re.search(stated, head)[1] == pins[variable], name
        licence = name.split(".")[0] + ".LICENSE"
        assert (STATIC / "vendor" / licence).is_file(), licence


def test_the_page_loads_every_vendored_file():
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    for vendored in (STATIC / "vendor").iterdir():
        if vendored.suffix in {".js", ".css"}:
            assert f"/static/vendor/{vendored.name}" in page, vendored.name
