"""read_skill: a folder skill's body on demand, without its frontmatter."""

from __future__ import annotations

import pytest

GIT_SKILL = "---\nname: git\ndescription: Commit with care.\n---\n\n# Git\nAlways run the tests.\n"


@pytest.fixture
def read_skill(harness):
    return harness.tools.build_tools(["read_skill"])["read_skill"]


@pytest.fixture
def files_dir(make_harness):
    return make_harness(
        {
            "skills/git/SKILL.md": GIT_SKILL,
            "skills/testing/SKILL.md": "---\ndescription: Test.\n---\nRun pytest.\n",
        }
    )


def test_returns_the_body_without_frontmatter(read_skill, ctx, files_dir):
    assert read_skill.run({"name": "git"}, ctx) == "# Git\nAlways run the tests.\n"


def test_reads_the_skills_the_context_advertises(read_skill, ctx, files_dir, harness):
    ctx.skills = {"git": harness.workspace.discover_skills(files_dir)["git"]}

    assert read_skill.run({"name": "testing"}, ctx) == (
        "Error: unknown skill 'testing'; available skills: git"
    )


def test_an_unknown_skill_is_an_error_listing_the_available_ones(read_skill, ctx, files_dir):
    assert read_skill.run({"name": "deploy"}, ctx) == (
        "Error: unknown skill 'deploy'; available skills: git, testing"
    )


def test_without_skills_the_error_says_none(read_skill, ctx, make_harness):
    make_harness({})

    assert read_skill.run({"name": "git"}, ctx).endswith("available skills: none")


def test_a_missing_name_is_an_error(read_skill, ctx, files_dir):
    assert read_skill.run({}, ctx).startswith("Error: 'name' must be a string")
