"""The README is part of the interface: its configuration reference names every config key."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from flashrsi_dagster.config import ExperimentConfig
from flashrsi_dagster.config.schema import valid_keys

README = Path(__file__).resolve().parents[1] / "README.md"


def _keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        if not valid_keys(field.annotation):
            keys.append(f"{prefix}{name}")
        else:
            sub = field.annotation if isinstance(field.annotation, type) else None
            nested = sub or next(
                a for a in getattr(field.annotation, "__args__", ()) if valid_keys(a)
            )
            keys += _keys(nested, f"{name}.")
    return keys


def test_every_config_key_is_documented():
    reference = README.read_text().split("## Configuration reference")[1].split("\n## ")[0]

    missing = [
        key
        for section in ExperimentConfig.model_fields.values()
        for key in _keys(section.annotation)
        if f"`{'.'.join(key.split('.')[-2:])}`" not in reference
        and f"`{key.rsplit('.', 1)[-1]}`" not in reference
    ]

    assert missing == []


def test_readme_names_the_two_commands_that_ci_runs():
    text = README.read_text()
    ci = (README.parent / ".ci" / "run").read_text()

    assert "make demo" in text and "make test" in text
    assert "make test" in ci
