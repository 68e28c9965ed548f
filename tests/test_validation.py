"""The dry run: what a run would otherwise find out late is refused by `validate` and by `run`
before anything is written — exit 2, one line naming the file, key or task, and no home."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from flashrsi_dagster.benchmarks.harbor.suite import TASKS_DIR
from flashrsi_dagster.benchmarks.loading import load_benchmark, load_splits
from flashrsi_dagster.benchmarks.splits import Splits
from flashrsi_dagster.cli import main
from flashrsi_dagster.config import load_config
from flashrsi_dagster.validation import dry_run
from tests.conftest import write_harness

EXAMPLE = Path(__file__).parents[1] / "examples" / "meta_harness.yaml"
UNSET = "FLASHRSI_DRY_RUN_NEVER_SET_KEY"


def _rows(path: Path, ids: list[str]) -> Path:
    rows = [{"id": i, "text": f"text {n}", "label": "benign"} for n, i in enumerate(ids)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def malformed_data(tmp: Path) -> tuple[list[str], list[str]]:
    data = _rows(tmp / "data.jsonl", ["a", "b"])
    data.write_text(data.read_text() + '{"id": "c", "text": \n')
    return ["--benchmark.data_path", str(data)], [
        "benchmark.data_path",
        f"{data}: line 3: not JSON",
    ]


def empty_data(tmp: Path) -> tuple[list[str], list[str]]:
    data = tmp / "empty.jsonl"
    data.write_text("")
    return ["--benchmark.data_path", str(data)], ["benchmark.data_path", f"{data}: no rows"]


def data_path_is_a_folder(tmp: Path) -> tuple[list[str], list[str]]:
    folder = tmp / "data"
    folder.mkdir()
    _rows(folder / "rows.jsonl", ["a"])
    return ["--benchmark.data_path", str(folder)], [f"benchmark.data_path: {folder}: a folder"]


def duplicate_task_ids(tmp: Path) -> tuple[list[str], list[str]]:
    data = _rows(tmp / "data.jsonl", ["a", "b", "c", "b"])
    return ["--benchmark.data_path", str(data)], [f"{data}: duplicate task ids: b"]


def unknown_adapter(tmp: Path) -> tuple[list[str], list[str]]:
    return ["--agent.type", "no_such_package.agent:Agent"], [
        "agent.type: cannot import agent type 'no_such_package.agent:Agent'"
    ]


def miniagent_on_anthropic(tmp: Path) -> tuple[list[str], list[str]]:
    return ["--agent.llm.api", "anthropic"], [
        "agent.llm.api: miniagent does not speak 'anthropic'",
        "set agent.llm.api: chat",
    ]


def claude_code_worker_on_chat(tmp: Path) -> tuple[list[str], list[str]]:
    return ["--algorithm.worker.type", "claude-code"], [
        "algorithm.worker.llm.api: claude-code does not speak 'chat'"
    ]


def harness_without_components(tmp: Path) -> tuple[list[str], list[str]]:
    harness = tmp / "harness"
    (harness / "prompts").mkdir(parents=True)
    (harness / "prompts" / "system.md").write_text("Classify.\n")
    return ["--agent.source_dir", str(harness)], [
        f"agent.source_dir: {harness}/components.yaml: components declaration not found"
    ]


def harness_declaring_no_file(tmp: Path) -> tuple[list[str], list[str]]:
    harness = tmp / "harness"
    harness.mkdir()
    (harness / "components.yaml").write_text("prompt: [prompts/**]\n")
    (harness / "notes.md").write_text("not declared\n")
    return ["--agent.source_dir", str(harness)], [
        f"agent.source_dir: {harness} has no file matching its components (prompt: prompts/**)"
    ]


def _harbor_tasks(tmp: Path) -> Path:
    return Path(shutil.copytree(TASKS_DIR, tmp / "tasks"))


def broken_task_toml(tmp: Path) -> tuple[list[str], list[str]]:
    tasks = _harbor_tasks(tmp)
    (tasks / "git-revert-commit" / "task.toml").write_text("[agent\ntimeout_sec = 1\n")
    args = ["--benchmark.name", "terminal_bench", "--benchmark.tasks_dir", str(tasks)]
    return args, [f"benchmark.tasks_dir: {tasks}/git-revert-commit/task.toml: invalid TOML"]


def invalid_task_config(tmp: Path) -> tuple[list[str], list[str]]:
    tasks = _harbor_tasks(tmp)
    toml = tasks / "fix-permissions" / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = ", 'timeout_sec = "soon" #', 1))
    args = ["--benchmark.name", "terminal_bench", "--benchmark.tasks_dir", str(tasks)]
    return args, [f"{toml}: invalid task config:", "timeout_sec"]


def empty_tasks_dir(tmp: Path) -> tuple[list[str], list[str]]:
    tasks = tmp / "tasks"
    tasks.mkdir()
    args = ["--benchmark.name", "terminal_bench", "--benchmark.tasks_dir", str(tasks)]
    return args, [f"benchmark.tasks_dir: {tasks}: no Harbor task folders"]


def unset_key(tmp: Path) -> tuple[list[str], list[str]]:
    return ["--agent.llm.api_key", "${" + UNSET + "}"], [
        f"agent.llm.api_key: ${{{UNSET}}} is not set; export {UNSET}"
    ]


def empty_test_split(tmp: Path) -> tuple[list[str], list[str]]:
    counts = [
        f"--benchmark.split_counts.{s}={n}" for s, n in (("train", 1), ("dev", 2), ("test", 0))
    ]
    return counts, ["benchmark.split_counts.test: the test split is empty"]


def split_counts_larger_than_the_pool(tmp: Path) -> tuple[list[str], list[str]]:
    data = _rows(tmp / "data.jsonl", ["a", "b", "c"])
    return ["--benchmark.data_path", str(data)], [
        f"benchmark.data_path: {data}: split_counts ask for 180 tasks",
        "the pool has 3",
    ]


def target_without_shell_on_terminal_bench(tmp: Path) -> tuple[list[str], list[str]]:
    return ["--benchmark.name", "terminal_bench", "--agent.type", "llm"], [
        "agent.type: llm cannot run commands in a task's own environment"
    ]


def harbor_agent_on_text_classification(tmp: Path) -> tuple[list[str], list[str]]:
    return ["--agent.type", "harbor-oracle"], [
        "agent.type: harbor-oracle runs only inside a task's own environment"
    ]


def unknown_harbor_environment(tmp: Path) -> tuple[list[str], list[str]]:
    args = ["--benchmark.name", "terminal_bench", "--benchmark.harbor_environment", "dokcer"]
    return args, ["benchmark.harbor_environment: unknown Harbor environment 'dokcer'"]


def evolution_data_overlapping_test(tmp: Path) -> tuple[list[str], list[str]]:
    data = _rows(tmp / "data.jsonl", [f"t{n}" for n in range(12)])
    evolution = tmp / "evolution.jsonl"
    evolution.write_text(data.read_text())  # the same rows: dev and test among them
    args = [
        *("--benchmark.data_path", str(data), "--benchmark.evolution_data_path", str(evolution)),
        *[f"--benchmark.split_counts.{s}=4" for s in ("train", "dev", "test")],
    ]
    return args, [f"benchmark.evolution_data_path: {evolution} overlaps dev/test"]


def worker_without_turns(tmp: Path) -> tuple[list[str], list[str]]:
    return ["--algorithm.worker.max_turns", "0"], [
        "algorithm.worker.max_turns: 0 allows no tool call: the worker edits harness files "
        "through tool calls, so it could make no edit"
    ]


def worker_without_tool_calls(tmp: Path) -> tuple[list[str], list[str]]:
    return ["--algorithm.worker.max_tool_calls", "0"], ["algorithm.worker.max_tool_calls: 0"]


def target_without_turns_on_terminal_bench(tmp: Path) -> tuple[list[str], list[str]]:
    return ["--benchmark.name", "terminal_bench", "--agent.max_turns", "0"], [
        "agent.max_turns: 0 allows no tool call: terminal_bench tasks are solved by running "
        "commands, so the target could do nothing"
    ]


def adopted_improver_without_file_tools(tmp: Path) -> tuple[list[str], list[str]]:
    return ["--agent.type", "llm", "--algorithm.worker.harness", "adopted"], [
        "algorithm.worker.harness: adopted runs the target's harness as the Worker, but the "
        "target's adapter 'llm' has no file tools"
    ]


CASES: list[Callable[[Path], tuple[list[str], list[str]]]] = [
    malformed_data,
    empty_data,
    data_path_is_a_folder,
    duplicate_task_ids,
    unknown_adapter,
    miniagent_on_anthropic,
    claude_code_worker_on_chat,
    harness_without_components,
    harness_declaring_no_file,
    broken_task_toml,
    invalid_task_config,
    empty_tasks_dir,
    unset_key,
    empty_test_split,
    split_counts_larger_than_the_pool,
    target_without_shell_on_terminal_bench,
    harbor_agent_on_text_classification,
    unknown_harbor_environment,
    evolution_data_overlapping_test,
    worker_without_turns,
    worker_without_tool_calls,
    target_without_turns_on_terminal_bench,
    adopted_improver_without_file_tools,
]


def _command(command: str, home: Path, args: list[str]) -> list[str]:
    # Unconfined, so that each case shows its own problem whether or not this machine can jail.
    return [
        *(command, "--config", str(EXAMPLE), "--experiment.home", str(home)),
        *("--experiment.confinement", "none", *args),
    ]


@pytest.mark.parametrize("case", CASES, ids=[case.__name__ for case in CASES])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_refused_before_anything_is_written(case, command, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(UNSET, raising=False)
    args, fragments = case(tmp_path)
    home = tmp_path / "home"

    code = main(_command(command, home, args))

    err = capsys.readouterr().err
    assert code == 2, err
    [line] = err.splitlines()  # one line: no trace, no second copy
    assert line.startswith("error: ")
    for fragment in fragments:
        assert fragment in line
    assert not home.exists()


def test_eval_is_refused_the_same_way(tmp_path, capsys):
    args, fragments = miniagent_on_anthropic(tmp_path)
    home = tmp_path / "home"

    code = main(_command("eval", home, ["--split", "dev", *args]))

    assert code == 2
    assert fragments[0] in capsys.readouterr().err
    assert not home.exists()


def test_an_infinite_timeout_is_refused_by_validate_and_run(tmp_path, capsys):
    home = tmp_path / "home"

    for command in ("validate", "run"):
        assert main(_command(command, home, ["--agent.timeout", ".inf"])) == 2
        assert "agent.timeout (set by --agent.timeout): " in capsys.readouterr().err
    assert not home.exists()


def test_every_problem_is_listed_at_once(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(UNSET, raising=False)
    args = [*miniagent_on_anthropic(tmp_path)[0], *unset_key(tmp_path)[0]]
    args += empty_data(tmp_path)[0]

    assert main(_command("validate", tmp_path / "home", args)) == 2

    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": ")[1] for line in lines] == [
        "agent.llm.api",
        "agent.llm.api_key",
        "benchmark.data_path",
    ]


def test_the_demo_config_passes_and_the_test_split_is_never_unsealed(tmp_path, monkeypatch):
    def sealed(self):
        raise AssertionError("the dry run unsealed the test split")

    monkeypatch.setattr(Splits, "unseal_test", sealed)
    evolution = _rows(tmp_path / "evolution.jsonl", ["evo-1", "evo-2"])
    config = load_config(
        EXAMPLE,
        [
            *("--experiment.home", str(tmp_path / "home")),
            *("--benchmark.evolution_data_path", str(evolution)),
        ],
    )

    assert dry_run(config) == []
    assert not (tmp_path / "home").exists()


def test_a_file_in_place_of_the_home_is_refused(tmp_path, capsys):
    home = tmp_path / "home"
    home.write_text("not a folder\n")

    assert main(_command("run", home, [])) == 2

    assert f"error: experiment.home: {home} is not a folder" in capsys.readouterr().err
    assert home.read_text() == "not a folder\n"


@pytest.mark.parametrize(
    ("home", "kind"), [("/proc/flashrsi-x", "proc"), ("/sys/flashrsi-x", "sysfs")]
)
def test_a_home_on_a_kernel_filesystem_is_refused(home, kind, capsys):
    """`/proc` and `/sys` look like folders (root may write there), but hold no experiment:
    one line naming the key, no trace, from every command that would make the folder."""
    for command in ("validate", "run", "init"):
        code = main(_command(command, Path(home), []))

        [line] = capsys.readouterr().err.splitlines()
        assert code == 2
        assert line.startswith(f"error: experiment.home: /{home.split('/')[1]} is on the kernel's")
        assert f"{kind} filesystem" in line
    assert not Path(home).exists()


def test_a_target_answering_in_text_may_take_no_tool_turn(tmp_path):
    """Text classification is answered in text: with `max_turns: 0` the model is asked only
    for its answer (seed 003's 0 = none), which a model can give in one call."""
    home = ["--experiment.home", str(tmp_path / "home"), "--experiment.confinement", "none"]
    config = load_config(EXAMPLE, [*home, "--agent.max_turns", "0"])

    assert dry_run(config) == []


def test_an_evolver_anchor_larger_than_train_is_refused(tmp_path):
    """Each WHY's anchor set is drawn from train: a larger anchor_size was silently train."""
    evolver = EXAMPLE.parent / "evolver.yaml"
    home = ["--experiment.home", str(tmp_path / "home"), "--experiment.confinement", "none"]

    refused = dry_run(load_config(evolver, [*home, "--algorithm.anchor_size", "1000"]))
    fits = dry_run(load_config(evolver, [*home, "--algorithm.anchor_size", "24"]))

    assert refused == [
        "algorithm.anchor_size: 1000 is more than the 24 tasks of the train split, from which "
        "each WHY's anchor set is drawn; set it to at most 24, or give train more tasks "
        "(benchmark.split_counts.train)"
    ]
    assert fits == []


# ModularRSI: module files in the seed harness, the train split as evolution data, its roles.
# Each case gets the folder of `modular.yaml` and its harness (tests.conftest.modular_dir).


def module_file_missing(folder: Path) -> tuple[list[str], list[str]]:
    return ["--algorithm.modules.tool_use", "[runtime/agent.py, tools/missing.py]"], [
        "algorithm.modules.tool_use[1]: tools/missing.py is not a file of the harness "
        f"({folder / 'harness'}); module files must exist in the seed snapshot"
    ]


def module_file_is_a_folder(folder: Path) -> tuple[list[str], list[str]]:
    return ["--algorithm.modules.agent_loop", "[runtime]"], [
        "algorithm.modules.agent_loop[0]: runtime is not a file of the harness"
    ]


def module_file_is_a_symlink(folder: Path) -> tuple[list[str], list[str]]:
    (folder / "harness" / "runtime" / "link.py").symlink_to("agent.py")
    return ["--algorithm.modules.context_management", "[runtime/link.py]"], [
        "algorithm.modules.context_management[0]: runtime/link.py is not a file of the harness"
    ]


def module_file_not_in_the_components(folder: Path) -> tuple[list[str], list[str]]:
    return ["--algorithm.modules.context_management", "[notes.md]"], [
        "algorithm.modules.context_management[0]: notes.md is not declared by the harness's "
        f"components ({folder / 'harness'}/components.yaml), so it is not in the seed snapshot"
    ]


def empty_train_split(folder: Path) -> tuple[list[str], list[str]]:
    return ["--benchmark.split_counts.train", "0"], [
        "benchmark.split_counts.train: the train split is empty, but modular_rsi needs it"
    ]


def train_sharing_an_id_with_test(folder: Path) -> tuple[list[str], list[str]]:
    rows = [("a", "train"), ("b", "train"), ("c", "dev"), ("a", "test")]
    data = folder / "given.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": i, "text": f"text {n}", "label": "benign", "split": split}) + "\n"
            for n, (i, split) in enumerate(rows)
        )
    )
    return ["--benchmark.data_path", str(data)], [
        f"benchmark.data_path: {data}: duplicate task ids: a"
    ]


def evolution_data_overlapping_dev(folder: Path) -> tuple[list[str], list[str]]:
    data = _rows(folder / "pool.jsonl", [f"t{n}" for n in range(12)])
    evolution = folder / "evolution.jsonl"
    evolution.write_text(data.read_text())
    return [
        *("--benchmark.data_path", str(data), "--benchmark.evolution_data_path", str(evolution)),
    ], [f"benchmark.evolution_data_path: {evolution} overlaps dev/test"]


def evolution_data_with_duplicate_ids(folder: Path) -> tuple[list[str], list[str]]:
    evolution = _rows(folder / "evolution.jsonl", ["evo-1", "evo-2", "evo-1"])
    return ["--benchmark.evolution_data_path", str(evolution)], [
        f"{evolution}: duplicate task ids: evo-1"
    ]


def evolution_limit_without_evolution_data(folder: Path) -> tuple[list[str], list[str]]:
    return ["--benchmark.evolution_limit", "2"], [
        "benchmark.evolution_limit: set without benchmark.evolution_data_path"
    ]


def worker_without_file_tools(folder: Path) -> tuple[list[str], list[str]]:
    return ["--algorithm.worker.type", "llm"], [
        "algorithm.worker.type: 'llm' has no file tools; the worker must be an agent"
    ]


def worker_that_may_not_edit(folder: Path) -> tuple[list[str], list[str]]:
    return ["--algorithm.worker.permissions.edit", "false"], [
        "algorithm.worker.permissions.edit: false: the worker edits harness files"
    ]


def target_denying_a_tool_it_does_not_have(folder: Path) -> tuple[list[str], list[str]]:
    return ["--agent.permissions.deny_tools", '["Bash"]'], [
        "agent.permissions.deny_tools: miniagent has no tool(s) 'Bash'"
    ]


REVIEWER = ["--algorithm.review_by", "reviewer", "--algorithm.reviewer.llm.model", "sim/r"]


def reviewer_of_an_unknown_type(folder: Path) -> tuple[list[str], list[str]]:
    return [*REVIEWER, "--algorithm.reviewer.type", "no_such_package.agent:Agent"], [
        "algorithm.reviewer.type: cannot import agent type 'no_such_package.agent:Agent'"
    ]


def reviewer_key_unset(folder: Path) -> tuple[list[str], list[str]]:
    return [*REVIEWER, "--algorithm.reviewer.llm.api_key", "${" + UNSET + "}"], [
        f"algorithm.reviewer.llm.api_key: ${{{UNSET}}} is not set"
    ]


MODULAR_CASES: list[Callable[[Path], tuple[list[str], list[str]]]] = [
    module_file_missing,
    module_file_is_a_folder,
    module_file_is_a_symlink,
    module_file_not_in_the_components,
    empty_train_split,
    train_sharing_an_id_with_test,
    evolution_data_overlapping_dev,
    evolution_data_with_duplicate_ids,
    evolution_limit_without_evolution_data,
    worker_without_file_tools,
    worker_that_may_not_edit,
    target_denying_a_tool_it_does_not_have,
    reviewer_of_an_unknown_type,
    reviewer_key_unset,
]


def _modular_command(command: str, folder: Path, home: Path, args: list[str]) -> list[str]:
    return [
        *(command, "--config", str(folder / "modular.yaml"), "--experiment.home", str(home)),
        *("--experiment.confinement", "none", *args),
    ]


@pytest.mark.parametrize("case", MODULAR_CASES, ids=[case.__name__ for case in MODULAR_CASES])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_modular_rsi_is_refused_before_anything_is_written(
    case, command, modular_dir, tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv(UNSET, raising=False)
    args, fragments = case(modular_dir)
    home = tmp_path / "home"

    code = main(_modular_command(command, modular_dir, home, args))

    err = capsys.readouterr().err
    assert code == 2, err
    [line] = err.splitlines()
    assert line.startswith("error: ")
    for fragment in fragments:
        assert fragment in line
    assert not home.exists()


def _modular(folder: Path, home: Path, *overrides: str):
    return load_config(
        folder / "modular.yaml",
        ["--experiment.home", str(home), "--experiment.confinement", "none", *overrides],
    )


def test_the_modular_rsi_config_passes_with_the_test_split_sealed(
    modular_dir, tmp_path, monkeypatch
):
    def sealed(self):
        raise AssertionError("the dry run unsealed the test split")

    monkeypatch.setattr(Splits, "unseal_test", sealed)

    assert dry_run(_modular(modular_dir, tmp_path / "home")) == []
    assert not (tmp_path / "home").exists()


def test_modular_rsi_needs_no_dev_split(modular_dir, tmp_path):
    config = _modular(modular_dir, tmp_path / "home", "--benchmark.split_counts.dev", "0")

    assert dry_run(config) == []


def test_a_reviewer_needs_no_file_tools_and_the_worker_may_be_another_agent(modular_dir, tmp_path):
    config = _modular(
        modular_dir,
        tmp_path / "home",
        *(*REVIEWER, "--algorithm.reviewer.type", "llm"),
        *("--algorithm.worker.type", "claude-code", "--algorithm.worker.llm.api", "anthropic"),
        *("--algorithm.worker.llm.model", "simulator/claude-worker"),
    )

    assert dry_run(config) == []


def test_extension_modules_name_files_of_their_own_harness(modular_dir, tmp_path):
    harness = write_harness(
        tmp_path / "extensions",
        {
            "CLAUDE.md": "Be brief.\n",
            "skills/workflow/SKILL.md": "Plan.\n",
            "hooks/hooks.json": "{}",
        },
        {"prompt": ["CLAUDE.md"], "skill": ["skills/**"], "hook": ["hooks/**"]},
    )
    modules = "{prompt: [CLAUDE.md], skill: [skills/workflow/SKILL.md], hook: [hooks/hooks.json]}"
    text = (modular_dir / "modular.yaml").read_text()
    start, end = text.index("  modules:\n"), text.index("  worker:\n")
    (modular_dir / "modular.yaml").write_text(f"{text[:start]}  modules: {modules}\n{text[end:]}")

    config = _modular(modular_dir, tmp_path / "home", "--agent.source_dir", str(harness))

    assert dry_run(config) == []
    assert dry_run(_modular(modular_dir, tmp_path / "home")) == [
        f"algorithm.modules.{name}[0]: {path} is not a file of the harness "
        f"({modular_dir / 'harness'}); module files must exist in the seed snapshot"
        for name, path in (
            ("prompt", "CLAUDE.md"),
            ("skill", "skills/workflow/SKILL.md"),
            ("hook", "hooks/hooks.json"),
        )
    ]


def test_evolution_data_replaces_train_up_to_its_limit(modular_dir, tmp_path):
    pool = _rows(modular_dir / "pool.jsonl", [f"t{n}" for n in range(12)])
    evolution = modular_dir / "evolution.jsonl"
    evolution.write_text(
        "".join(
            json.dumps({"id": f"evo-{n}", "text": f"evolution text {n}", "label": "benign"}) + "\n"
            for n in (1, 2, 3)
        )
    )
    base = ["--benchmark.data_path", str(pool)]
    given = [*base, "--benchmark.evolution_data_path", str(evolution)]
    config = _modular(modular_dir, tmp_path / "home", *given, "--benchmark.evolution_limit", "2")

    assert dry_run(config) == []
    splits = load_splits(config.benchmark, load_benchmark(config.benchmark))
    plain = _modular(modular_dir, tmp_path / "home", *base).benchmark
    without = load_splits(plain, load_benchmark(plain))
    assert [t.id for t in splits.train] == ["evo-1", "evo-2"]
    assert splits.dev == without.dev
    assert splits.unseal_test() == without.unseal_test()


def _harbor_pool_and_evolution(tmp: Path) -> tuple[Path, Path]:
    """The built-in Harbor tasks split in two folders: a pool and independent evolution tasks."""
    pool = _harbor_tasks(tmp)
    evolution = tmp / "evolution"
    evolution.mkdir()
    for folder in sorted(pool.iterdir())[:2]:
        folder.rename(evolution / folder.name)
    return pool, evolution


def test_harbor_evolution_tasks_replace_train(modular_dir, tmp_path):
    pool, evolution = _harbor_pool_and_evolution(tmp_path)
    config = _modular(
        modular_dir,
        tmp_path / "home",
        *("--benchmark.name", "terminal_bench", "--benchmark.tasks_dir", str(pool)),
        *("--benchmark.evolution_data_path", str(evolution), "--benchmark.split_counts.train=1"),
        *("--benchmark.split_counts.dev=2", "--benchmark.split_counts.test=2"),
    )

    assert dry_run(config) == []
    splits = load_splits(config.benchmark, load_benchmark(config.benchmark))
    assert sorted(t.id for t in splits.train) == sorted(p.name for p in evolution.iterdir())


def test_harbor_evolution_tasks_copied_from_the_pool_are_refused(modular_dir, tmp_path, capsys):
    pool, evolution = _harbor_pool_and_evolution(tmp_path)
    shutil.copytree(next(pool.iterdir()), evolution / "renamed-copy")
    args = [
        *("--benchmark.name", "terminal_bench", "--benchmark.tasks_dir", str(pool)),
        *("--benchmark.evolution_data_path", str(evolution), "--benchmark.split_counts.train=0"),
        *("--benchmark.split_counts.dev=4", "--benchmark.split_counts.test=5"),
    ]
    home = tmp_path / "home"

    assert main(_modular_command("validate", modular_dir, home, args)) == 2

    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: benchmark.evolution_data_path: {evolution} overlaps dev/test:")
    assert "renamed-copy (same instruction)" in line
    assert not home.exists()
