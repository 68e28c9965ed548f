"""The ModularRSI examples beside `examples/modular_rsi.yaml` (tested in `test_run.py`): each
passes the dry run as written where its prerequisites exist here, and the Claude Code one runs
end to end on the engine with the real CLI against the offline simulator."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.modular_rsi.run import ModularRSI
from flashrsi_dagster.benchmarks.loading import load_benchmark, load_splits
from flashrsi_dagster.benchmarks.swe_bench import repos
from flashrsi_dagster.cli import main
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.llm.endpoints import offline_server
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import Status
from flashrsi_dagster.rollouts.record import RolloutRecord
from tests.algorithms.modular_rsi.scripted import findings, verdict
from tests.benchmarks.test_swe_bench import _record
from tests.conftest import _NO_JAILS, needs_jails
from tests.sabotage.helpers import say, script_model, shell, unique

EXAMPLES = Path(__file__).parents[3] / "examples"
CLAUDE_CODE = EXAMPLES / "modular_rsi_claude_code.yaml"
SWE_BENCH = EXAMPLES / "modular_rsi_swe_bench.yaml"
HARNESS = EXAMPLES / "harnesses" / "claude_code_modular"


def _why_no_claude_code() -> str | None:
    """Claude Code runs here when the `claude` extra's SDK and its bundled CLI are installed."""
    if importlib.util.find_spec("claude_agent_sdk") is None:
        return "the claude-agent-sdk package (the `claude` extra) is not installed"
    from flashrsi_dagster.agents.claude_code.options import bundled_cli

    if not bundled_cli().is_file():
        return f"claude-agent-sdk has no bundled Claude Code CLI at {bundled_cli()}"
    return None


_NO_CLAUDE_CODE = _why_no_claude_code()
needs_claude_code = pytest.mark.skipif(
    _NO_CLAUDE_CODE is not None or _NO_JAILS is not None,
    reason=_NO_CLAUDE_CODE or _NO_JAILS or "",
)
"""As written the examples run jailed (bubblewrap, root) with Claude Code installed."""


@needs_claude_code
def test_the_claude_code_example_passes_the_dry_run_as_written(tmp_path, capsys):
    code = main(["validate", "--config", str(CLAUDE_CODE), "--experiment.home", str(tmp_path)])

    err = capsys.readouterr().err
    assert code == 0, err
    assert "target claude-code with simulator/target" in err
    assert "modules=prompt/skill/hook" in err
    assert not any(tmp_path.iterdir())  # the dry run writes nothing


def test_the_claude_code_harness_has_the_adapters_layout_and_a_native_plugin_manifest():
    builtin = {"CLAUDE.md", "skills", "hooks", "agents"}  # the adapter's plugin parts + prompt
    top = {p.name for p in HARNESS.iterdir()}
    assert top <= builtin | {"components.yaml", ".claude-plugin"}
    manifest = json.loads((HARNESS / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "harness"  # skills stay `harness:<name>`, as with the built-in
    config = load_config(CLAUDE_CODE, ["--experiment.home", "/nonexistent"])
    assert config.agent.source_dir == HARNESS.resolve()  # relative to the YAML's folder
    assert config.algorithm.modules == {
        "prompt": ["CLAUDE.md"],
        "skill": ["skills/workflow/SKILL.md"],
        "hook": ["hooks/hooks.json"],
    }


def _broken(runs: list) -> str:
    """What a broken run of the check said: its status and error, for the failure message."""
    return "; ".join(f"{t.task_id}: {t.status.value} {t.error!r}" for t in runs if t.error)


@needs_claude_code
def test_the_claude_code_example_runs_end_to_end_on_the_real_cli(tmp_path):
    """The target's requests go to a recording simulator: CLAUDE.md is appended to the native
    system prompt, and the plugin (the harness's own manifest) lists its skill."""
    with OfflineModelServer(ServerConfig(record_bodies=True)) as server:
        config = load_config(
            CLAUDE_CODE,
            [
                *("--experiment.home", str(tmp_path / "home")),
                *("--agent.llm.base_url", server.root_url),
            ],
        )
        algo = ModularRSI(open_experiment(config), log=lambda _: None)
        state = algo.run()
        target = [r for r in server.requests if r.role == "target"]

    steps = {m: state.step(m, 0) for m in ("prompt", "skill", "hook")}
    assert steps["prompt"].status == "accepted" and steps["skill"].status == "accepted"
    assert steps["hook"].status == "no_change"  # guidance is not a hook's business
    for step in (steps["prompt"], steps["skill"]):
        assert [g.name for g in step.gates] == [
            "scope",
            "content",
            "compile",
            "review",
            "execution",
        ]
    seed = algo.seed()
    store = algo.experiment.snapshots
    manifest = ".claude-plugin/plugin.json"  # in the seed, and in no module's range
    assert store.read_file_at(seed, manifest) == (HARNESS / manifest).read_bytes()
    rollouts = RolloutRecord(algo.layout.rollouts("prompt", 0)).load()
    assert len(rollouts) == 3 * 2 and all(t.status != Status.ERROR for t in rollouts)
    init = next(m for m in rollouts[0].messages if m.get("subtype") == "init")["data"]
    assert {"name": "harness", "version": "0.1.0"}.items() <= init["plugins"][0].items()
    assert "harness:workflow" in init["skills"]
    claude_md = (HARNESS / "CLAUDE.md").read_text().strip()
    assert target and all(claude_md in r.body["system"][-1]["text"] for r in target[:6])
    # the merge made the rules the prompt branch wrote part of what the model reads
    merge = state.step("integration", 0)
    assert merge.status == "accepted" and merge.check is not None
    assert merge.check.passed, _broken(RolloutRecord(algo.layout.check(0)).load())
    merged = store.read_file_at(merge.current_id, "CLAUDE.md").decode()
    assert "when the text mentions:" in merged
    assert any("when the text mentions:" in r.body["system"][-1]["text"] for r in target)
    assert state.promotion is not None and state.test is not None and state.test.test_tasks == 3


def _swe_data(folder: Path, prefix: str, n: int) -> Path:
    """`n` instance records of one repository, its tree beside them (`repos/`) at their base
    commit (validate checks it is there)."""
    tree = folder / "repos" / f"{prefix}__repo"
    tree.mkdir(parents=True)
    (tree / "t.py").write_text("def test_0():\n    pass\n")
    base = repos.commit_tree(tree, folder / "made")
    shutil.rmtree(folder / "made")
    path = folder / f"{prefix}.jsonl"
    rows = [
        _record(
            f"{prefix}__repo-{i}",
            f"{prefix}/repo",
            "1.0",
            [f"t.py::test_{i}"],
            [],
            base_commit=base,
        )
        for i in range(n)
    ]
    path.write_text("\n".join(json.dumps(row) for row in rows))
    return path


def _swe_args(tmp_path: Path, data: Path, *more: str) -> list[str]:
    return [
        *("validate", "--config", str(SWE_BENCH), "--experiment.home", str(tmp_path / "home")),
        *("--benchmark.data_path", str(data)),
        *("--benchmark.split_counts.train", "2", "--benchmark.split_counts.test", "3"),
        *more,
    ]


@needs_jails
def test_the_swe_bench_example_passes_the_dry_run_with_data_and_keys(tmp_path, capsys, monkeypatch):
    """Its keys are the user's to supply, and its data may be: instance records in the
    official schema (hand-written here) stand in for a downloaded dataset, a placeholder for
    the key."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = _swe_data(tmp_path / "data", "pool", 5)

    assert main(["validate", "--config", str(SWE_BENCH)]) == 2
    assert "agent.llm.api_key: ${OPENAI_API_KEY} is not set" in capsys.readouterr().err
    assert main(_swe_args(tmp_path, data)) == 2
    assert "agent.llm.api_key: ${OPENAI_API_KEY} is not set" in capsys.readouterr().err

    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    code = main(_swe_args(tmp_path, data))
    err = capsys.readouterr().err
    assert code == 0, err
    assert "on swe_bench (train/dev/test 2/0/3)" in err
    assert "modules=agent_loop/tool_use/observation_management" in err


@needs_jails
def test_the_swe_bench_examples_optional_evolution_data_replaces_train(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    pool = _swe_data(tmp_path / "data", "pool", 5)
    evolution = _swe_data(tmp_path / "evolution", "evo", 4)

    args = _swe_args(
        tmp_path,
        pool,
        *("--benchmark.evolution_data_path", str(evolution)),
        *("--benchmark.evolution_limit", "3"),
    )
    code = main(args)
    assert code == 0, capsys.readouterr().err
    config = load_config(SWE_BENCH, args[3:])
    splits = load_splits(config.benchmark, load_benchmark(config.benchmark))
    assert [t.id for t in splits.train] == [f"evo__repo-{i}" for i in range(3)]
    assert splits.test_size == 3
    # the same records as evolution data overlap dev/test, and are refused
    assert main(_swe_args(tmp_path, pool, "--benchmark.evolution_data_path", str(pool))) == 2
    assert "overlaps dev/test" in capsys.readouterr().err


@needs_jails
def test_the_swe_bench_example_as_written_passes_the_dry_run_on_the_tiny_set(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")

    code = main(["validate", "--config", str(SWE_BENCH), "--experiment.home", str(tmp_path)])

    err = capsys.readouterr().err
    assert code == 0, err
    assert "on swe_bench (train/dev/test 2/0/1)" in err


@pytest.mark.slow
@needs_jails
def test_the_swe_bench_example_runs_a_batch_on_the_tiny_set_to_a_recorded_decision(
    tmp_path, monkeypatch
):
    """The example on `examples/swe_bench_tiny` with the offline simulator: the target
    (`simulator/echo`) changes nothing, so every rollout is graded unresolved by `swebench`;
    a scripted Worker finds one thing for context_management and edits its file; the batch
    reruns on the edit and the step records its decision; then the promotion and the sealed
    test on the third instance."""
    monkeypatch.setenv("OPENAI_API_KEY", "unused")  # referenced, never sent to the simulator
    name = unique("swe-worker")
    model = script_model(name)
    config = load_config(
        SWE_BENCH,
        [
            *("--experiment.home", str(tmp_path / "home")),
            *("--agent.llm.base_url", "offline", "--agent.llm.model", "simulator/echo"),
            *("--algorithm.worker.llm.base_url", "offline", "--algorithm.worker.llm.model", model),
            *("--algorithm.num_rollouts", "1", "--algorithm.edit_budget", "1"),
            *("--algorithm.integration_rounds", "1"),
        ],
    )
    algo = ModularRSI(open_experiment(config), log=lambda _: None)
    batch = algo.schedule.batches[0]
    finding = {"file": "runtime/agent.py", "tasks": batch, "reason": "r", "change": "c"}
    offline_server().add_script(
        name,
        [
            findings(),  # agent_loop
            findings(),  # tool_use
            findings(),  # observation_management
            findings(finding),  # context_management
            shell("printf '\\n# Keep the issue text in view.\\n' >> runtime/agent.py"),
            say("kept the issue in view"),
            verdict("accept"),
            findings(),  # task_completion_detection
            shell("cp .branches/context_management/runtime/agent.py runtime/"),
            say("merged"),
            verdict("accept"),
            say("nothing to repair"),  # the integration's repair round
            verdict("accept"),
        ],
    )

    state = algo.run()

    step = state.step("context_management", 0)
    assert step.status in ("accepted", "rejected") and step.reason
    assert [g.name for g in step.gates][-1] == "execution"
    rollouts = RolloutRecord(algo.layout.rollouts("context_management", 0)).load()
    assert sorted(t.task_id for t in rollouts) == sorted(batch)
    assert {t.task_id for t in rollouts} <= {f"flashrsi__tinytext-{n}" for n in (1, 2, 3)}
    for trajectory in rollouts:
        report = trajectory.metadata["swe_bench"]
        assert trajectory.status == Status.FAILURE and trajectory.score == 0.0
        assert report["patch_exists"] and not report["resolved"]
        assert report["tests_status"]["FAIL_TO_PASS"]["failure"]  # the new tests still fail
    assert state.promotion is not None and state.test is not None
    assert state.test.test_tasks == 1 and state.test.test_score == 0.0
