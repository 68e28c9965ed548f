"""The dry run: what a run would otherwise find out late is refused by `validate` and by `run`
before anything is written — exit 2, one line naming the file, key or task, and no home."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from flashrsi_dagster.benchmarks.harbor.suite import TASKS_DIR
from flashrsi_dagster.benchmarks.splits import Splits
from flashrsi_dagster.cli import main
from flashrsi_dagster.config import load_config
from flashrsi_dagster.validation import dry_run

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
