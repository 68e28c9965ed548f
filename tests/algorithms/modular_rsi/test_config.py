"""The ModularRSI config (`algorithm.name: modular_rsi`): its modules, counts and roles, and
how a config of one algorithm is told from another's by `algorithm.name`."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.meta_harness.config import MetaHarnessConfig
from flashrsi_dagster.algorithms.modular_rsi.config import MIN_PROMPT_BUDGET, ModularRSIConfig
from flashrsi_dagster.cli import describe, main
from flashrsi_dagster.config import ConfigError, load_config
from flashrsi_dagster.config.models import MAX_ATTEMPTS, MAX_PROMPT_CHARS, MAX_STEPS, MAX_TASKS
from tests.conftest import MODULAR_RSI, VALID

FIVE = """\
  modules:
    agent_loop: [runtime/agent.py]
    tool_use: [runtime/agent.py, tools/shell.py]
    observation_management: [runtime/agent.py, runtime/tool_result.py]
    context_management: [runtime/agent.py]
    task_completion_detection: [runtime/agent.py]
"""
MODULES_LINE = 9
REVIEWER = """\
  reviewer:
    type: llm
    llm: {model: simulator/reviewer, base_url: offline}
"""


def _write(folder: Path, text: str) -> Path:
    path = folder / "modular.yaml"
    path.write_text(text)
    return path


def _problems(path: Path, overrides: list[str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides)
    return [p.render() for p in info.value.problems]


def _modules(text: str) -> str:
    """The valid config with its `modules` block replaced by `text` (indented under it)."""
    body = "".join(f"    {line}\n" for line in text.splitlines())
    return MODULAR_RSI.replace(FIVE, f"  modules:\n{body}" if text else "  modules: {}\n")


def test_a_five_module_config_loads_with_documented_defaults(modular_dir):
    config = load_config(modular_dir / "modular.yaml")

    algorithm = config.algorithm
    assert isinstance(algorithm, ModularRSIConfig)
    assert list(algorithm.modules) == [
        "agent_loop",
        "tool_use",
        "observation_management",
        "context_management",
        "task_completion_detection",
    ]
    assert algorithm.modules["tool_use"] == ["runtime/agent.py", "tools/shell.py"]
    assert (algorithm.epochs, algorithm.batch_size, algorithm.num_rollouts) == (1, 4, 2)
    assert (algorithm.edit_budget, algorithm.prompt_budget) == (3, 60_000)
    assert algorithm.integration_rounds == 2
    assert (algorithm.review_by, algorithm.reviewer) == ("worker", None)
    assert list(config.roles()) == ["target", "worker"]  # no reviewer role when none is given
    assert ModularRSIConfig.REQUIRED_SPLITS == ("train", "test")  # dev takes no part
    assert set(ModularRSIConfig.EDITING_ROLES) == {"worker"}


def test_every_field_is_documented():
    undocumented = [
        name
        for name, field in ModularRSIConfig.model_fields.items()
        if name != "name" and not field.description
    ]

    assert undocumented == []


def test_the_three_extension_modules_load(modular_dir):
    path = _write(
        modular_dir,
        _modules(
            "prompt: [CLAUDE.md]\nskill: [skills/workflow/SKILL.md]\nhook: [hooks/hooks.json]"
        ),
    )

    config = load_config(path)

    assert config.algorithm.modules == {
        "prompt": ["CLAUDE.md"],
        "skill": ["skills/workflow/SKILL.md"],
        "hook": ["hooks/hooks.json"],
    }


FIVE_NAMES = (
    "agent_loop, tool_use, observation_management, context_management, task_completion_detection"
)
REFUSED_MODULES = [
    # (id, the modules block, fragments of the one problem under algorithm.modules)
    (
        "incomplete-runtime-set",
        "agent_loop: [runtime/agent.py]\ntool_use: [tools/shell.py]",
        [
            f"declare exactly the five runtime modules ({FIVE_NAMES}) or exactly the three "
            "extension modules (prompt, skill, hook)",
            "missing observation_management, context_management, task_completion_detection",
        ],
    ),
    (
        "incomplete-extension-set",
        "prompt: [CLAUDE.md]\nhook: [hooks/hooks.json]",
        ["missing skill"],
    ),
    (
        "mixed-set",
        FIVE.replace("  modules:\n", "").replace("    ", "") + "prompt: [CLAUDE.md]",
        ["not of this set: prompt"],
    ),
    ("unknown-names", "planner: [runtime/agent.py]", ["unknown module(s) planner"]),
    ("no-modules", "", ["unknown module(s) (none)"]),
    (
        "empty-file-list",
        "prompt: []\nskill: [skills/workflow/SKILL.md]\nhook: [hooks/hooks.json]",
        ["prompt: empty: list at least one file of the harness"],
    ),
    (
        "retired-function-form",
        FIVE.replace("  modules:\n", "")
        .replace("    ", "")
        .replace("context_management: [runtime/agent.py]", "context_management: [a.py::step]"),
        ["context_management: [0] 'a.py::step': the `file.py::function` form is retired"],
    ),
    (
        "absolute-path",
        "prompt: [/etc/CLAUDE.md]\nskill: [s/SKILL.md]\nhook: [h.json]",
        ["prompt: [0] '/etc/CLAUDE.md': expected a relative path inside the harness"],
    ),
    (
        "path-out-of-the-harness",
        "prompt: [../CLAUDE.md]\nskill: [s/SKILL.md]\nhook: [h.json]",
        ["'../CLAUDE.md': expected a relative path inside the harness", "without `..`"],
    ),
    (
        "not-normalised",
        "prompt: [./CLAUDE.md]\nskill: [s/SKILL.md]\nhook: [h.json]",
        ["'./CLAUDE.md': expected a relative path inside the harness, written with `/`"],
    ),
    (
        "pattern",
        "prompt: [CLAUDE.md]\nskill: ['skills/**']\nhook: [h.json]",
        ["skill: [0] 'skills/**': expected an exact file path, not a pattern"],
    ),
]


@pytest.mark.parametrize(
    ("modules", "fragments"),
    [case[1:] for case in REFUSED_MODULES],
    ids=[case[0] for case in REFUSED_MODULES],
)
def test_a_wrong_module_declaration_is_refused_naming_the_key(modular_dir, modules, fragments):
    path = _write(modular_dir, _modules(modules))

    [problem] = _problems(path)

    assert problem.startswith(f"algorithm.modules (line {MODULES_LINE}): ")
    for fragment in fragments:
        assert fragment in problem


@pytest.mark.parametrize(
    "modules",
    ["agent_loop: runtime/agent.py", "[agent_loop, tool_use]", "agent_loop: [3]"],
    ids=["a-string-not-a-list", "a-list-not-a-mapping", "a-number-not-a-path"],
)
def test_modules_of_the_wrong_shape_are_refused_naming_the_key(modular_dir, modules):
    text = MODULAR_RSI.replace(FIVE, f"  modules: {{{modules}}}\n")
    if modules.startswith("["):
        text = MODULAR_RSI.replace(FIVE, f"  modules: {modules}\n")
    path = _write(modular_dir, text)

    problems = _problems(path)

    assert problems and all(p.startswith("algorithm.modules") for p in problems), problems


COUNTS = [
    ("epochs", 1, MAX_STEPS),
    ("batch_size", 1, MAX_TASKS),
    ("num_rollouts", 1, MAX_ATTEMPTS),
    ("edit_budget", 1, MAX_STEPS),
    ("prompt_budget", MIN_PROMPT_BUDGET, MAX_PROMPT_CHARS),
    ("integration_rounds", 0, MAX_STEPS),
]


@pytest.mark.parametrize(("key", "least", "most"), COUNTS, ids=[c[0] for c in COUNTS])
def test_every_count_has_bounds_checked_at_validation(modular_dir, key, least, most):
    path = modular_dir / "modular.yaml"
    flag = f"--algorithm.{key}"

    assert getattr(load_config(path, [flag, str(least)]).algorithm, key) == least
    assert getattr(load_config(path, [flag, str(most)]).algorithm, key) == most
    under = _problems(path, [flag, str(least - 1)])
    huge = _problems(path, [flag, "1.0e+20"])  # a float, as YAML reads it

    where = f"algorithm.{key} (set by {flag})"
    assert under == [f"{where}: input should be greater than or equal to {least} (got {least - 1})"]
    assert len(huge) == 1
    assert huge[0].startswith(f"{where}: input should be less than or equal to {most} (got 1")


def test_no_integration_rounds_means_the_merge_alone(modular_dir):
    config = load_config(modular_dir / "modular.yaml", ["--algorithm.integration_rounds", "0"])

    assert config.algorithm.integration_rounds == 0


def test_a_reviewer_role_reviews_when_review_by_says_so(modular_dir):
    text = MODULAR_RSI.replace("benchmark:", f"{REVIEWER}  review_by: reviewer\nbenchmark:")

    config = load_config(_write(modular_dir, text))

    assert config.algorithm.review_by == "reviewer"
    assert config.algorithm.reviewer.llm.model == "simulator/reviewer"
    assert list(config.roles()) == ["target", "worker", "reviewer"]
    assert config.role_key("reviewer") == "algorithm.reviewer"
    assert "reviewer" not in ModularRSIConfig.EDITING_ROLES  # it needs no file tools


def test_review_by_reviewer_without_a_reviewer_section_is_refused(modular_dir):
    text = MODULAR_RSI.replace("benchmark:", "  review_by: reviewer\nbenchmark:")

    assert _problems(_write(modular_dir, text)) == [
        "algorithm.reviewer (line 7): required with review_by: reviewer; add a reviewer "
        "section (type, llm, …) or set review_by: worker"
    ]


def test_a_reviewer_section_nobody_uses_is_refused(modular_dir):
    text = MODULAR_RSI.replace("benchmark:", f"{REVIEWER}benchmark:")

    assert _problems(_write(modular_dir, text)) == [
        "algorithm.reviewer (line 18): never used: review_by is worker (the default), so the "
        "worker reviews; set algorithm.review_by: reviewer, or remove this section"
    ]


def test_worker_and_target_may_be_different_agents_on_different_models(modular_dir):
    config = load_config(
        modular_dir / "modular.yaml",
        [
            *("--algorithm.worker.type", "claude-code", "--algorithm.worker.llm.api", "anthropic"),
            *("--algorithm.worker.llm.model", "claude-worker"),
        ],
    )

    assert (config.agent.type, config.agent.llm.model) == ("miniagent", "simulator/target")
    assert (config.algorithm.worker.type, config.algorithm.worker.llm.model) == (
        "claude-code",
        "claude-worker",
    )


def test_overrides_are_typed_by_the_modular_rsi_schema(modular_dir):
    config = load_config(
        modular_dir / "modular.yaml",
        [
            *("--algorithm.batch_size", "8", "--algorithm.review_by", "worker"),
            *("--algorithm.modules.agent_loop", "[runtime/agent.py, runtime/tool_result.py]"),
        ],
    )

    assert config.algorithm.batch_size == 8
    assert config.algorithm.modules["agent_loop"] == ["runtime/agent.py", "runtime/tool_result.py"]


def test_another_algorithms_key_is_refused_listing_this_algorithms_keys(modular_dir):
    path = _write(modular_dir, MODULAR_RSI.replace("  worker:", "  max_steps: 3\n  worker:"))

    from_file = _problems(path)
    from_flag = _problems(modular_dir / "modular.yaml", ["--algorithm.max_steps", "3"])

    keys = ", ".join(ModularRSIConfig.model_fields)
    assert from_file == [
        f"algorithm.max_steps (line 15): unknown key 'max_steps'; valid keys here: {keys}"
    ]
    assert from_flag == [
        f"algorithm.max_steps (set by --algorithm.max_steps): unknown key 'max_steps'; "
        f"valid keys here: {keys}"
    ]


def test_a_misspelt_key_is_matched_against_this_algorithms_keys(modular_dir):
    assert _problems(modular_dir / "modular.yaml", ["--algorithm.batchsize", "2"]) == [
        "algorithm.batchsize (set by --algorithm.batchsize): unknown key 'batchsize'; "
        "did you mean 'batch_size'?"
    ]
    assert _problems(modular_dir / "modular.yaml", ["--algorithm.modulez.x", "[a]"]) == [
        "algorithm.modulez (set by --algorithm.modulez.x): unknown key 'modulez'; "
        "did you mean 'modules'?"
    ]


def test_meta_harness_refuses_modular_rsi_keys(config_dir):
    assert _problems(config_dir / "exp.yaml", ["--algorithm.epochs", "2"]) == [
        "algorithm.epochs (set by --algorithm.epochs): unknown key 'epochs'; valid keys here: "
        + ", ".join(MetaHarnessConfig.model_fields)
    ]


def test_an_unknown_algorithm_names_the_key_the_value_and_the_known_names(config_dir):
    path = config_dir / "exp.yaml"
    path.write_text(VALID.replace("name: meta_harness", "name: modular"))

    expected = (
        "expected one of: 'meta_harness', 'modular_rsi', 'evolver', 'dgm', 'stop', 'best_of_n'"
    )
    assert _problems(path) == [f"algorithm.name (line 12): {expected} (got modular)"]
    assert _problems(path, ["--algorithm.name", "raven"]) == [
        f"algorithm.name (set by --algorithm.name): {expected} (got raven)"
    ]
    path.write_text(VALID.replace("  name: meta_harness\n", ""))
    assert _problems(path) == [f"algorithm.name (line 11): required key is missing; {expected}"]


def test_an_unknown_algorithm_fails_validate_with_exit_2_and_nothing_written(config_dir, capsys):
    path = config_dir / "exp.yaml"
    path.write_text(VALID.replace("name: meta_harness", "name: modular"))
    home = config_dir / "home"

    for command in ("validate", "run"):
        code = main([command, "--config", str(path), "--experiment.home", str(home)])
        err = capsys.readouterr().err
        assert code == 2
        assert "algorithm.name (line 12): expected one of: 'meta_harness', 'modular_rsi'" in err
    assert not home.exists()


def test_the_summary_line_names_the_modules_and_every_role(modular_dir):
    text = MODULAR_RSI.replace("benchmark:", f"{REVIEWER}  review_by: reviewer\nbenchmark:")
    config = load_config(_write(modular_dir, text))

    line = describe(config)

    assert line.startswith(
        "modular_rsi (modules=agent_loop/tool_use/observation_management/context_management/"
        "task_completion_detection, epochs=1, batch_size=4, num_rollouts=2, edit_budget=3, "
        "prompt_budget=60000, integration_rounds=2, answer_retries=2, activation_gate=False, "
        "gate_repairs=0, review_by=reviewer) on text_classification"
    )
    assert (
        "target miniagent with simulator/target, worker miniagent with simulator/worker, "
        "reviewer llm with simulator/reviewer" in line
    )
    assert "None" not in describe(load_config(modular_dir / "modular.yaml"))


def test_relative_paths_resolve_against_the_yaml_folder(modular_dir):
    data = modular_dir / "data"
    data.mkdir()
    for name in ("rows.jsonl", "evolution.jsonl"):
        (data / name).write_text('{"id": "a", "text": "t", "label": "benign"}\n')
    (modular_dir / "worker-harness").mkdir()
    (modular_dir / "reviewer-harness").mkdir()
    reviewer = REVIEWER.replace(
        "    type: llm\n", "    type: llm\n    source_dir: reviewer-harness\n"
    )
    worker = "    type: miniagent\n    llm: {model: simulator/worker"
    text = (
        MODULAR_RSI.replace(worker, worker.replace("llm:", "source_dir: worker-harness\n    llm:"))
        .replace("benchmark:", f"{reviewer}  review_by: reviewer\nbenchmark:")
        .replace(
            "  name: text_classification\n",
            "  name: text_classification\n  data_path: data/rows.jsonl\n"
            "  evolution_data_path: data/evolution.jsonl\n",
        )
    )

    config = load_config(_write(modular_dir, text))  # the working directory is elsewhere

    assert Path.cwd() != modular_dir
    assert config.agent.source_dir == (modular_dir / "harness").resolve()
    assert config.algorithm.worker.source_dir == (modular_dir / "worker-harness").resolve()
    assert config.algorithm.reviewer.source_dir == (modular_dir / "reviewer-harness").resolve()
    assert config.benchmark.data_path == (data / "rows.jsonl").resolve()
    assert config.benchmark.evolution_data_path == (data / "evolution.jsonl").resolve()
