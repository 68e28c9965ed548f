"""Each top-level package says what its files hold, one line each, in its README: a file added
or moved without its line fails here."""

from __future__ import annotations

from pathlib import Path

import flashrsi_dagster

PACKAGE = Path(flashrsi_dagster.__file__).parent


def _packages() -> list[Path]:
    return sorted(p for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())


def _listed(readme: Path) -> set[str]:
    block = readme.read_text(encoding="utf-8").split("```")[1]
    return {line.split()[0] for line in block.splitlines() if line.strip()}


def _held(package: Path) -> set[str]:
    files = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    folders = {f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").is_file()}
    return files | folders


def test_every_top_level_package_names_each_of_its_files_in_its_readme():
    packages = _packages()
    missing = [p.name for p in packages if not (p / "README.md").is_file()]
    wrong = {
        p.name: sorted(_listed(p / "README.md") ^ _held(p))
        for p in packages
        if (p / "README.md").is_file() and _listed(p / "README.md") != _held(p)
    }

    assert "algorithms" in [p.name for p in packages]
    assert missing == []
    assert wrong == {}
