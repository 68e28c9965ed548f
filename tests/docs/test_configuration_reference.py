"""The configuration reference (docs/configuration.md) names every config key the code takes,
and the README names the two commands CI runs."""

from __future__ import annotations

from pathlib import Path

from flashrsi_dagster.config import ExperimentConfig
from flashrsi_dagster.config.schema import models_in, valid_keys

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "configuration.md"
README = ROOT / "README.md"


def _keys(annotation: object, prefix: str = "") -> list[str]:
    """Every key a section can hold; a union (`algorithm`) holds each member's."""
    keys = []
    for model in models_in(annotation):
        for name, field in model.model_fields.items():
            if not valid_keys(field.annotation):
                keys.append(f"{prefix}{name}")
            else:
                keys += _keys(field.annotation, f"{name}.")
    return list(dict.fromkeys(keys))


def test_every_config_key_is_documented():
    reference = REFERENCE.read_text()

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
    ci = (ROOT / ".ci" / "run").read_text()

    assert "make demo" in text and "make test" in text
    assert "make test" in ci
