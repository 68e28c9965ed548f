"""Evaluator-protected paths: a child that touches one is refused, naming the path and why;
the rest of the harness (and of a file with a protected key) stays evolvable."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from flashrsi_dagster.agents import adapter_class, harness_components
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.snapshots import Components, ComponentsError, SnapshotStore
from flashrsi_dagster.snapshots.protection import PROTECTED_KIND, REASON

AGENT_YAML = "prompt: prompts/system.md\ntools: [shell]\nlimits:\n  shell_timeout: 120\n"
COMPONENTS = {
    "prompt": ["prompts/**"],
    "config": ["agent.yaml", "settings.json"],
    "protected": ["agent.yaml#limits", "settings.json", "tests/**"],
}


@pytest.fixture
def seeded(store: SnapshotStore, make_harness):
    files = {
        "prompts/system.md": "Be careful.\n",
        "agent.yaml": AGENT_YAML,
        "settings.json": '{"permissions": {"allow": []}}\n',
    }
    return store.create_seed(make_harness(files, components=COMPONENTS))


def _edit(store: SnapshotStore, seed, tmp_path: Path, change) -> object:
    folder = store.check_out(seed, tmp_path / f"edit-{len(list(tmp_path.iterdir()))}")
    change(folder)
    return store.commit_child(seed, folder, message="candidate")


def test_a_changed_protected_key_is_refused_with_the_reason(store, seeded, tmp_path):
    def loosen(folder: Path) -> None:
        text = (folder / "agent.yaml").read_text().replace("120", "100000")
        (folder / "agent.yaml").write_text(text)

    outcome = _edit(store, seeded, tmp_path, loosen)

    assert outcome.status == "refused" and outcome.snapshot is None
    (refusal,) = outcome.protected
    assert refusal.path == "agent.yaml" and refusal.kind == PROTECTED_KIND
    assert refusal.reason.startswith(f"{REASON} (agent.yaml#limits): changed `limits`")
    assert "permissions or budgets" in outcome.reason


def test_the_rest_of_a_file_with_a_protected_key_stays_evolvable(store, seeded, tmp_path):
    def add_tool(folder: Path) -> None:
        (folder / "agent.yaml").write_text(AGENT_YAML.replace("[shell]", "[shell, editor]"))

    outcome = _edit(store, seeded, tmp_path, add_tool)

    assert outcome.status == "committed", outcome.reason


@pytest.mark.parametrize(
    "change",
    [
        lambda f: (f / "settings.json").write_text('{"permissions": {"allow": ["*"]}}'),
        lambda f: (f / "settings.json").unlink(),
        lambda f: (f / "agent.yaml").unlink(),  # the limits go with the file
        lambda f: (f / "agent.yaml").write_text("limits: [unclosed\n"),
    ],
    ids=["settings-edited", "settings-deleted", "limits-deleted", "unreadable-yaml"],
)
def test_every_kind_of_touch_is_refused(store, seeded, tmp_path, change):
    outcome = _edit(store, seeded, tmp_path, change)

    assert outcome.status == "refused"
    assert outcome.protected, outcome.reason


def test_an_undeclared_protected_file_is_refused_as_protected(store, seeded, tmp_path):
    def add_test(folder: Path) -> None:
        (folder / "tests").mkdir()
        (folder / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")

    outcome = _edit(store, seeded, tmp_path, add_test)

    assert outcome.status == "refused"
    assert [r.path for r in outcome.protected] == ["tests/test.sh"]


def test_the_list_is_kept_in_the_seed_and_inherited(store, seeded, tmp_path):
    def prompt(folder: Path) -> None:
        (folder / "prompts/system.md").write_text("Be more careful.\n")

    child = _edit(store, seeded, tmp_path, prompt).snapshot
    reopened = SnapshotStore(store.root).get(child.id)

    assert reopened.components.protected == tuple(COMPONENTS["protected"])


def test_adapters_declare_their_lists_and_a_harness_may_replace_them(tmp_path):
    miniagent = (
        "agent.yaml#limits",
        "runtime/beacon.py",
        "runtime/budget.py",
        "runtime/permissions.py",
    )
    assert adapter_class("miniagent").protected == miniagent
    assert "settings.json" in adapter_class("claude-code").protected
    role = {"type": "miniagent", "llm": {"model": "simulator/target", "base_url": "offline"}}
    assert harness_components(RoleConfig(**role)).protected == miniagent

    own = tmp_path / "harness"
    shutil.copytree(HARNESS, own)
    declared = yaml.safe_load((own / "components.yaml").read_text())
    (own / "components.yaml").write_text(yaml.safe_dump({**declared, "protected": []}))
    assert harness_components(RoleConfig(**role, source_dir=own)).protected == ()


def test_a_malformed_protected_section_names_the_entry():
    with pytest.raises(ComponentsError, match=r"protected\[0\].*\.\."):
        Components.parse({"prompt": ["p/**"], "protected": ["../x"]})
    with pytest.raises(ComponentsError, match="nothing after `#`"):
        Components.parse({"prompt": ["p/**"], "protected": ["agent.yaml#"]})
