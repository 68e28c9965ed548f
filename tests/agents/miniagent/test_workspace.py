"""The workspace: agent.yaml, skill discovery, the system prompt and the enabled tools."""

from __future__ import annotations

import shutil

import pytest
import yaml

PROMPT = "You are a test agent.\n"
SKILLS_HEADER = "## Skills\nCall read_skill with a skill's name to read it before relying on it.\n"


def skill_md(description: str, body: str = "Body.\n") -> str:
    return f"---\ndescription: {description}\n---\n{body}"


@pytest.fixture
def files(make_harness):
    """Writes a harness folder: agent.yaml from `agent` plus the given files."""

    def make(extra: dict[str, str] | None = None, **agent):
        spec = {"prompt": "prompts/system.md", "tools": ["shell", "editor"], **agent}
        return make_harness(
            {"agent.yaml": yaml.safe_dump(spec), "prompts/system.md": PROMPT, **(extra or {})}
        )

    return make


@pytest.fixture
def ws(harness):
    return harness.workspace


def test_folder_skills_are_discovered_with_one_line_descriptions(ws, files):
    root = files(
        {
            "skills/git/SKILL.md": "---\ndescription: >\n  Commit\n  with care.\n---\nBody.\n",
            "skills/assets/logo.txt": "a folder without SKILL.md is no skill",
        }
    )

    skills = ws.discover_skills(root)

    assert list(skills) == ["git"]
    assert skills["git"].description == "Commit with care."
    assert skills["git"].path == root / "skills/git/SKILL.md"


def test_the_prompt_lists_folder_skills_by_description_sorted(ws, files):
    root = files(
        {"skills/zeta/SKILL.md": skill_md("Last."), "skills/alpha/SKILL.md": skill_md("First.")}
    )

    _, prompt, _ = ws.load_workspace(root, root)

    assert prompt == f"{PROMPT}\n{SKILLS_HEADER}- alpha: First.\n- zeta: Last.\n"
    assert "Body." not in prompt


def test_read_skill_is_enabled_exactly_while_folder_skills_exist(ws, files):
    root = files({"skills/git/SKILL.md": skill_md("Git.")})
    _, _, tools = ws.load_workspace(root, root)
    assert list(tools) == ["shell", "editor", "read_skill"]

    shutil.rmtree(root / "skills/git")
    _, prompt, tools = ws.load_workspace(root, root)

    assert list(tools) == ["shell", "editor"]
    assert "## Skills" not in prompt


def test_read_skill_listed_in_agent_yaml_stays_without_skills(ws, files):
    root = files(tools=["read_skill", "shell"])

    _, _, tools = ws.load_workspace(root, root)

    assert list(tools) == ["read_skill", "shell"]


def test_listed_flat_skills_are_inlined_in_full(ws, files):
    style = "---\nnote: kept\n---\nWrite short lines.\n"
    root = files(
        {
            "skills/style.md": style,
            "skills/tone.md": "Be kind.\n",
            "skills/git/SKILL.md": skill_md("Git."),
        },
        skills=["style", "skills/tone.md"],
    )

    _, prompt, tools = ws.load_workspace(root, root)

    assert prompt == (
        f"{PROMPT}\n## Skill: style\n\n{style.strip()}\n\n## Skill: tone\n\nBe kind.\n\n"
        f"{SKILLS_HEADER}- git: Git.\n"
    )
    assert "read_skill" in tools


def test_unlisted_flat_files_are_not_inlined(ws, files):
    root = files({"skills/style.md": "Write short lines.\n"})

    _, prompt, tools = ws.load_workspace(root, root)

    assert prompt == PROMPT and list(tools) == ["shell", "editor"]


@pytest.mark.parametrize("listed", [True, False])
def test_a_name_both_folder_and_flat_file_is_refused_naming_both(ws, files, listed):
    root = files(
        {"skills/style/SKILL.md": skill_md("Style."), "skills/style.md": "Flat.\n"},
        skills=["style"] if listed else [],
    )

    with pytest.raises(ValueError, match="both a folder") as error:
        ws.load_workspace(root, root)

    assert str(root / "skills/style/SKILL.md") in str(error.value)
    assert str(root / "skills/style.md") in str(error.value)


@pytest.mark.parametrize(
    ("entry", "error"),
    [("missing", "'missing' is not a file"), ("../secret", "outside the harness folder")],
)
def test_a_listed_flat_skill_must_be_a_file_in_the_harness(ws, files, entry, error):
    root = files(skills=[entry])

    with pytest.raises(ValueError, match=rf"agent.yaml: 'skills': .*{error}"):
        ws.load_workspace(root, root)


@pytest.mark.parametrize(
    ("skill", "error"),
    [
        ("No frontmatter.\n", "needs a 'description'"),
        ("---\ndescription: [a\n---\n", "not valid YAML"),
        ("---\ndescription: x\n", "never closed"),
        ("---\nname: other\ndescription: x\n---\n", "differs from folder 'git'"),
    ],
)
def test_a_malformed_skill_is_refused_naming_its_file(ws, files, skill, error):
    root = files({"skills/git/SKILL.md": skill})

    with pytest.raises(ValueError, match=error) as raised:
        ws.discover_skills(root)

    assert str(root / "skills/git/SKILL.md") in str(raised.value)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("prompt: prompts/system.md\nmodel: gpt\n", "unknown key.*'model'"),
        ("tools: [shell]\n", "'prompt' must be"),
        ("prompt: prompts/missing.md\n", "'prompt': no file 'prompts/missing.md'"),
        ("prompt: ../system.md\n", "outside the harness folder"),
        ("prompt: prompts/system.md\ntools: shell\n", "'tools' must be a list"),
        ("prompt: prompts/system.md\ntools: [bash]\n", "'tools': unknown tool 'bash'"),
        ("prompt: prompts/system.md\ntools: [shell, shell]\n", "lists a tool twice"),
        ("prompt: prompts/system.md\nskills: [1]\n", "'skills' must be a list"),
        ("prompt: prompts/system.md\nlimits: [1]\n", "'limits' must be a mapping"),
        ("prompt: prompts/system.md\nlimits: {max_turns: 3}\n", "unknown limit 'max_turns'"),
        ("prompt: prompts/system.md\nlimits: {shell_timeout: soon}\n", "'shell_timeout' must"),
        ("prompt: prompts/system.md\nlimits: {output_limit: 1.5}\n", "'output_limit' must"),
        ("- a list\n", "must be a mapping"),
        ("prompt: [unclosed\n", "cannot be read as YAML"),
    ],
)
def test_a_malformed_agent_yaml_is_refused_naming_file_and_key(ws, make_harness, text, error):
    root = make_harness({"agent.yaml": text, "prompts/system.md": PROMPT})

    with pytest.raises(ValueError, match=error) as raised:
        ws.load_agent_yaml(root)

    assert str(root / "agent.yaml") in str(raised.value)


def test_a_missing_agent_yaml_is_refused(ws, make_harness):
    with pytest.raises(ValueError, match=r"agent\.yaml"):
        ws.load_agent_yaml(make_harness({}))


def test_load_workspace_fills_the_context_and_overrides_limits(ws, files, tmp_path):
    root = files(
        {"skills/git/SKILL.md": skill_md("Git.")},
        limits={"shell_timeout": 30, "output_limit": 500},
    )
    work = tmp_path / "work"
    work.mkdir()

    ctx, _, _ = ws.load_workspace(root, work, output_limit=100, shell_timeout=None)

    assert (ctx.working_dir, ctx.files_dir) == (work, root)
    assert (ctx.shell_timeout, ctx.output_limit) == (30.0, 100)
    assert list(ctx.skills) == ["git"] and not ctx.cancel.is_set()


def test_load_workspace_refuses_an_unknown_limit(ws, files):
    root = files()

    with pytest.raises(ValueError, match="unknown limit 'turns'"):
        ws.load_workspace(root, root, turns=3)
