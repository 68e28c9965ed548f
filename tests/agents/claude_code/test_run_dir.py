"""The per-run plugin folder: the snapshot's extensions, under its own manifest or ours."""

from __future__ import annotations

import json

from flashrsi_dagster.agents.claude_code.adapter import HARNESS
from flashrsi_dagster.agents.claude_code.run_dir import MANIFEST, PLUGIN_NAME, run_dir
from tests.conftest import write_harness


def test_a_snapshot_without_a_manifest_gets_one_naming_the_plugin_harness():
    with run_dir(HARNESS) as run:
        manifest = json.loads((run.plugin / MANIFEST).read_text())
        assert manifest["name"] == PLUGIN_NAME
        assert (run.plugin / "hooks" / "hooks.json").is_file()
    assert not run.root.exists()


def test_a_snapshots_own_manifest_is_the_plugins_manifest(tmp_path):
    own = '{"name": "harness", "version": "2.0.0", "description": "mine"}\n'
    harness = write_harness(
        tmp_path / "harness",
        {MANIFEST: own, "skills/workflow/SKILL.md": "---\nname: workflow\n---\nPlan.\n"},
        {"skill": ["skills/**"], "plugin": [MANIFEST]},
    )
    with run_dir(harness) as run:
        assert (run.plugin / MANIFEST).read_text() == own
        assert (run.plugin / "skills" / "workflow" / "SKILL.md").is_file()
    assert (harness / MANIFEST).read_text() == own  # copied, not moved or linked


def test_links_in_the_snapshot_are_never_followed_on_the_host(tmp_path):
    """An evolved harness that links its manifest or a skill to a host file gets no copy of
    that file: the manifest is generated, the skill stays a link (resolved in the jail)."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host-only")
    files = tmp_path / "harness"
    (files / ".claude-plugin").mkdir(parents=True)
    (files / ".claude-plugin" / "plugin.json").symlink_to(secret)
    (files / "skills").mkdir()
    (files / "skills" / "leak.md").symlink_to(secret)
    with run_dir(files) as made:
        plugin = made.plugin
        assert "host-only" not in (plugin / ".claude-plugin" / "plugin.json").read_text()
        assert (plugin / "skills" / "leak.md").is_symlink()
