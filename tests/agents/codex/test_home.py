"""What a call's home holds, what a snapshot captures, and what config.toml may not say."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flashrsi_dagster.agents import harness_components
from flashrsi_dagster.agents.codex.home import build_home, home_problems
from flashrsi_dagster.config import RoleConfig, load_config
from flashrsi_dagster.snapshots import SnapshotStore
from flashrsi_dagster.snapshots.store import SnapshotError
from flashrsi_dagster.validation import dry_run

EXAMPLE = Path(__file__).parents[3] / "examples" / "codex.yaml"


def _plugin(harness: Path, name: str) -> None:
    bundle = harness / "plugins" / "cache" / name
    (bundle / ".codex-plugin").mkdir(parents=True)
    (bundle / ".codex-plugin" / "plugin.json").write_text(
        json.dumps({"name": name, "version": "1.0.0", "description": f"the {name} plugin"})
    )
    (bundle / "skills" / "tip").mkdir(parents=True)
    (bundle / "skills" / "tip" / "SKILL.md").write_text(
        f"---\nname: tip\ndescription: a tip from {name}\n---\nTip.\n"
    )


def test_the_home_holds_the_core_the_resources_and_only_enabled_plugins(harness_dir, tmp_path):
    _plugin(harness_dir, "notes")
    _plugin(harness_dir, "unused")
    with (harness_dir / "config.toml").open("a") as config:
        config.write("\n[plugins.notes]\nenabled = true\n\n[plugins.unused]\nenabled = false\n")
    (harness_dir / "plugins" / "data" / "notes").mkdir(parents=True)
    (harness_dir / "plugins" / "data" / "notes" / "state.db").write_text("run state")

    build_home(harness_dir, tmp_path / "home")

    home = tmp_path / "home"
    assert (home / "python_core" / "main.py").is_file()
    for name in ("AGENTS.md", "config.toml", "skills/patching/SKILL.md", "hooks/hooks.json"):
        assert (home / name).is_file(), name
    assert (home / "plugins/cache/notes/.codex-plugin/plugin.json").is_file()
    assert not (home / "plugins/cache/unused").exists()
    assert not (home / "plugins/data").exists()
    assert home_problems(harness_dir) == []


def test_a_snapshot_captures_plugin_bundles_but_never_plugin_run_state(harness_dir, tmp_path):
    _plugin(harness_dir, "notes")
    (harness_dir / "plugins" / "data" / "notes").mkdir(parents=True)
    (harness_dir / "plugins" / "data" / "notes" / "state.db").write_text("run state")
    config = RoleConfig.model_validate(
        {"type": "codex", "source_dir": harness_dir, "llm": {"model": "m", "api": "responses"}}
    )
    store = SnapshotStore(tmp_path / "store")

    seed = store.create_seed(harness_dir, harness_components(config))

    assert store.read_file_at(seed, "plugins/cache/notes/.codex-plugin/plugin.json")
    assert store.read_file_at(seed, "python_core/codex_core/session.py")
    assert store.read_file_at(seed, "config.toml")
    with pytest.raises(SnapshotError, match="not in snapshot"):
        store.read_file_at(seed, "plugins/data/notes/state.db")


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ('cli_path = "/usr/local/bin/codex"\n', "config.toml: cli_path: refused"),
        ('[features]\ncli_path = "/opt/codex"\n', "config.toml: features.cli_path: refused"),
        ('codex_linux_sandbox_exe = "/bin/x"\n', "config.toml: codex_linux_sandbox_exe: refused"),
        ('model = "gpt-5"\n', "config.toml: model: refused: connection settings"),
        ('[model_providers.x]\nbase_url = "http://x"\n', "config.toml: model_providers: refused"),
        ("[plugins.ghost]\nenabled = true\n", "config.toml: plugins.ghost: enabled but not"),
        ("not toml = = 1\n", "config.toml: not valid TOML"),
    ],
)
def test_config_toml_refusals_name_the_key(harness_dir, config, named):
    (harness_dir / "config.toml").write_text(config)
    problems = home_problems(harness_dir)
    assert len(problems) == 1 and problems[0].startswith(named), problems


def test_a_config_toml_link_is_refused_not_followed(harness_dir, tmp_path):
    (tmp_path / "elsewhere.toml").write_text('cli_path = "/x"\n')
    (harness_dir / "config.toml").unlink()
    (harness_dir / "config.toml").symlink_to(tmp_path / "elsewhere.toml")
    assert home_problems(harness_dir) == [
        "config.toml: a symlink; the snapshot's config must be a plain file"
    ]


def test_a_snapshot_without_its_core_is_refused(harness_dir):
    shutil.rmtree(harness_dir / "python_core")
    assert "has no python_core/main.py" in home_problems(harness_dir)[0]


def test_the_example_config_validates_and_a_source_with_cli_path_is_refused(harness_dir, tmp_path):
    home = ["--experiment.home", str(tmp_path / "home")]
    assert dry_run(load_config(EXAMPLE, home)) == []

    (harness_dir / "config.toml").write_text('cli_path = "/usr/local/bin/codex"\n')
    refused = load_config(EXAMPLE, [*home, "--agent.source_dir", str(harness_dir)])
    [problem] = dry_run(refused)
    assert problem.startswith("agent.source_dir: config.toml: cli_path: refused")
