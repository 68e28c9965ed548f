"""components.yaml: role -> globs; what is declared is exactly what is evolvable."""

from __future__ import annotations

import pytest

from flashrsi_dagster.snapshots import Components, ComponentsError


@pytest.fixture
def components() -> Components:
    return Components.parse(
        {
            "code": ["runtime/**", "tools/*.py"],
            "prompt": ["prompts/**"],
            "skill": ["skills/**/SKILL.md"],
            "config": "CLAUDE.md",
        }
    )


@pytest.mark.parametrize(
    ("path", "role"),
    [
        ("runtime/agent.py", "code"),
        ("runtime/deep/er/x.bin", "code"),
        ("tools/shell.py", "code"),
        ("tools/sub/shell.py", None),
        ("prompts/system.md", "prompt"),
        ("skills/a/SKILL.md", "skill"),
        ("skills/a/b/SKILL.md", "skill"),
        ("skills/a/notes.md", None),
        ("CLAUDE.md", "config"),
        ("docs/CLAUDE.md", None),
        ("runtimex/agent.py", None),
        ("components.yaml", None),
    ],
)
def test_role_of_matches_globs_by_path_segment(components, path, role):
    assert components.role_of(path) == role


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "expected a mapping"),
        (["runtime/**"], "expected a mapping"),
        ({"Code": ["x"]}, "lower-case name"),
        ({"code": []}, "non-empty list"),
        ({"code": [3]}, "expected a glob string"),
        ({"code": ["/abs/**"]}, "absolute"),
        ({"code": ["../up/**"]}, "`..`"),
        ({"code": [".git/**"]}, "git metadata"),
        ({"code": ["components.yaml"]}, "cannot be evolvable"),
    ],
)
def test_malformed_declarations_name_the_file_and_role(data, message):
    with pytest.raises(ComponentsError, match=r"components\.yaml") as info:
        Components.parse(data)
    assert message in str(info.value)


def test_from_file_names_a_missing_or_broken_file(tmp_path):
    with pytest.raises(ComponentsError, match="not found"):
        Components.from_file(tmp_path / "components.yaml")
    (tmp_path / "components.yaml").write_text("code: [unclosed\n")
    with pytest.raises(ComponentsError, match="YAML syntax error"):
        Components.from_file(tmp_path / "components.yaml")
