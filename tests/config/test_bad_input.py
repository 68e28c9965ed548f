"""Malformed configs and overrides: non-zero exit, the key path named, nothing left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flashrsi_dagster.cli import main
from tests.conftest import VALID, anchor_bomb


def _edit(old: str, new: str):
    return lambda text: text.replace(old, new, 1)


CASES = [
    # (id, change to the YAML text, extra CLI args, fragments the error must contain)
    (
        "unknown-key",
        _edit("  seed: 7", "  sead: 7"),
        [],
        ["experiment.sead (line 3)", "did you mean 'seed'"],
    ),
    (
        "wrong-type",
        _edit("max_steps: 4", "max_steps: many"),
        [],
        ["algorithm.max_steps (line 13)", "valid integer"],
    ),
    (
        "missing-required",
        _edit("      model: simulator/worker\n", ""),
        [],
        ["algorithm.worker.llm.model", "required key is missing"],
    ),
    (
        "yaml-syntax",
        _edit("  max_steps: 4", "  max_steps: [4"),
        [],
        ["(line 1", "YAML syntax error"],
    ),
    ("empty-file", lambda text: "", [], ["config file is empty"]),
    (
        "unknown-override",
        None,
        ["--algorithm.max_step", "2"],
        ["algorithm.max_step (set by --algorithm.max_step)", "did you mean 'max_steps'"],
    ),
    (
        "override-without-value",
        None,
        ["--benchmark.limit"],
        ["benchmark.limit", "override --benchmark.limit has no value"],
    ),
    (
        "missing-source-dir",
        _edit("source_dir: harness", "source_dir: no-such-harness"),
        [],
        ["agent.source_dir (line 6)", "folder does not exist"],
    ),
    (
        "empty-source-dir",  # it read as `.`: the config's own folder, without a word
        _edit("source_dir: harness", 'source_dir: ""'),
        [],
        ["agent.source_dir (line 6)", "an empty path"],
    ),
    (
        "blank-home-override",
        None,
        ["--experiment.home", " "],
        ["experiment.home (set by --experiment.home)", "an empty path"],
    ),
    (
        "literal-secret",
        _edit("${FLASHRSI_TEST_CANARY_API_KEY}", "sk-live0123456789abcdefXYZ"),
        [],
        ["agent.llm.api_key (line 10)", "literal secret", "${OPENAI_API_KEY}"],
    ),
    (
        "negative-split",
        _edit("dev: 5", "dev: -5"),
        [],
        ["benchmark.split_counts.dev (line 20)", "greater than or equal to 0"],
    ),
    (
        "duplicate-key",
        _edit("  max_steps: 4", "  max_steps: 4\n  max_steps: 5"),
        [],
        ["max_steps (line 14)", "duplicate key 'max_steps' (first defined on line 13)"],
    ),
    (
        "wrong-algorithm",
        _edit("name: meta_harness", "name: meta_harnes"),
        [],
        ["algorithm.name (line 12)", "'meta_harness'", "got meta_harnes"],
    ),
    (
        "override-wrong-type",
        None,
        ["--agent.max_turns", "lots"],
        ["agent.max_turns (set by --agent.max_turns)", "valid integer"],
    ),
    ("not-a-mapping", lambda text: "- just\n- a list\n", [], ["expected a mapping"]),
    (
        "section-not-mapping",
        _edit(
            "benchmark:\n  name: text_classification\n  split_counts: "
            "{train: 10, dev: 5, test: 20}\n",
            "benchmark: 3\n",
        ),
        [],
        ["benchmark (line 18)", "expected a mapping"],
    ),
    (
        "bad-experiment-name",
        _edit("name: exp-1", "name: a|b"),
        [],
        ["experiment.name (line 2)", "letters, digits"],
    ),
    (
        "anchor-bomb",
        _edit(
            "    base_url: offline\n", f"    base_url: offline\n    extra_body: {anchor_bomb(5)}\n"
        ),
        [],
        ["<config> (line 10)", "anchor bomb"],
    ),
    (
        "anchor-bomb-override",
        None,
        ["--agent.llm.extra_body", anchor_bomb(5)],
        ["agent.llm.extra_body (set by --agent.llm.extra_body)", "anchor bomb"],
    ),
    (
        "extra-body-sets-the-model",
        None,
        ["--agent.llm.extra_body", "{model: gpt-other, top_p: 0.5}"],
        [
            "agent.llm.extra_body (set by --agent.llm.extra_body): `model` may not be set here",
            "set llm.model",
        ],
    ),
    (
        "extra-body-sets-what-the-gateway-meters",
        _edit(
            "      base_url: offline\n",
            "      base_url: offline\n      extra_body: {stream: true}\n",
        ),
        [],
        ["algorithm.worker.llm.extra_body (line 18): `stream` may not be set here"],
    ),
    (
        "override-into-scalar",
        None,
        ["--agent.timeout.seconds", "3"],
        ["agent.timeout.seconds", "unknown key 'seconds'"],
    ),
    ("missing-file", lambda text: None, [], ["config file does not exist"]),
    (
        "huge-count",
        _edit("max_steps: 4", "max_steps: 1.0e+20"),
        [],
        ["algorithm.max_steps (line 13)", "less than or equal to 1000"],
    ),
    (
        "infinite-timeout",
        None,
        ["--agent.timeout", ".inf"],
        ["agent.timeout (set by --agent.timeout)", "finite number"],
    ),
    (
        "swe-bench-grading-elsewhere",
        None,
        ["--benchmark.swe_bench_grading", "docker"],
        ["benchmark", "swe_bench_grading: 'docker' grades SWE-bench patches"],
    ),
    (
        "run-shorter-than-a-model-call",
        _edit("    base_url: offline\n", "    base_url: offline\n    timeout: 900\n"),
        [],
        ["agent.timeout", "expected more than this role's llm.timeout (900 s), got 600 s"],
    ),
]


def _snapshot_tree(*roots: Path) -> set[str]:
    return {str(p) for root in roots for p in root.rglob("*")}


@pytest.mark.parametrize(
    ("change", "args", "fragments"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_exits_non_zero_naming_the_key(config_dir, capsys, change, args, fragments):
    path = config_dir / "exp.yaml"
    if change is not None:
        text = change(VALID)
        if text is None:
            path.unlink()
        else:
            path.write_text(text)
    before = _snapshot_tree(config_dir, Path.cwd())

    code = main(["validate", "--config", str(path), *args])

    err = capsys.readouterr().err
    assert code == 2
    assert str(path) in err
    for fragment in fragments:
        assert fragment in err
    assert "sk-live0123456789abcdefXYZ" not in err
    assert _snapshot_tree(config_dir, Path.cwd()) == before


def test_the_installed_command_exits_non_zero(config_dir):
    path = config_dir / "exp.yaml"
    path.write_text(VALID.replace("max_steps: 4", "max_steps: -1"))
    flashrsi = Path(sys.executable).parent / "flashrsi"

    result = subprocess.run(
        [str(flashrsi), "validate", "--config", str(path)],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
    )

    assert result.returncode == 2
    assert "algorithm.max_steps (line 13)" in result.stderr
