"""Attacks on the host's duties (seed 003, issue 12 part 2): the evaluator-protected paths, the
evaluator's manifest and evaluation sets, the decision ledger and `flashrsi rollback`, and the
labels that keep a score on e2 from passing as a lift on e1.

Each test is one attack, by a hostile Worker (an edit of its checkout), a careless operator (a
hand edit of an experiment folder, a roll-back run at the wrong moment) or a hostile evolved
harness (a plugin manifest that brings its own tools)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from flashrsi_dagster.agents.claude_code.adapter import ClaudeCode
from flashrsi_dagster.agents.miniagent.adapter import HARNESS as MINIAGENT
from flashrsi_dagster.agents.miniagent.adapter import MiniAgent
from flashrsi_dagster.cli import main
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.experiment.lock import StepLock
from flashrsi_dagster.records.verify import problems_of
from flashrsi_dagster.snapshots import SnapshotStore
from flashrsi_dagster.snapshots.components import Components
from tests.algorithms.test_host_duties import (
    run_across_dev_versions,
)
from tests.conftest import CANARY, CANARY_ENV, PATIENCE
from tests.decisions.test_ledger import copy_experiment, finished_demo
from tests.sabotage.helpers import every_byte_under, found_secret

EXAMPLES = Path(__file__).parents[2] / "examples"
CLAUDE_MODULAR = EXAMPLES / "harnesses" / "claude_code_modular"
NAME = "meta-harness-demo"
LOOSE = "shell_timeout: 100000"


# -- the protected paths: a hostile Worker's edit of its checkout -----------------------------


def _edit(tmp_path: Path, harness: Path, default: tuple[str, ...], edit: Callable[[Path], None]):
    """The outcome of committing `edit` (applied to a checkout of `harness`'s seed)."""
    components = Components.from_file(harness / "components.yaml").with_protection(default)
    store = SnapshotStore(tmp_path / "store")
    seed = store.create_seed(harness, components)
    checkout = store.check_out(seed, tmp_path / "checkout")
    edit(checkout)
    return store.commit_child(seed, checkout, message="candidate")


def _rewrite(path: Path, change: Callable[[str], str]) -> None:
    path.write_text(change(path.read_text()))


def _symlink_to_a_prompt(checkout: Path) -> None:
    loose = (checkout / "agent.yaml").read_text().replace("shell_timeout: 120", LOOSE)
    (checkout / "prompts" / "agent.yaml").write_text(loose)
    (checkout / "agent.yaml").unlink()
    (checkout / "agent.yaml").symlink_to("prompts/agent.yaml")


LIMITS_ATTACKS = {
    # agent.yaml gone: the runtime falls back to whatever it likes
    "delete": lambda c: (c / "agent.yaml").unlink(),
    # agent.yaml a link to an evolvable prompt file that holds looser limits
    "symlink": _symlink_to_a_prompt,
    # a second YAML document after the first: a parser that reads the last one sees it
    "second-document": lambda c: _rewrite(
        c / "agent.yaml", lambda s: s + f"---\nlimits:\n  {LOOSE}\n"
    ),
    # the key again, further down: PyYAML keeps the last
    "duplicate-key": lambda c: _rewrite(c / "agent.yaml", lambda s: s + f"limits:\n  {LOOSE}\n"),
    # the loosened values arrive through an anchor and a merge key
    "merge-key": lambda c: _rewrite(
        c / "agent.yaml",
        lambda s: s.split("limits:")[0] + "limits:\n  <<: &loose {" + LOOSE + "}\n",
    ),
    # a look-alike key (Cyrillic U+0456 for i) replaces `limits`: the real one is gone
    "look-alike-key": lambda c: _rewrite(
        c / "agent.yaml", lambda s: s.replace("limits:", "l\u0456mits:").replace("120", "100000")
    ),
}


@pytest.mark.parametrize("attack", sorted(LIMITS_ATTACKS))
def test_miniagent_limits_cannot_be_loosened_around_the_key_guard(tmp_path, attack):
    outcome = _edit(tmp_path, MINIAGENT, MiniAgent.protected, LIMITS_ATTACKS[attack])

    assert outcome.status == "refused", attack
    assert any(r.path == "agent.yaml" for r in outcome.protected), outcome.reason
    assert "evaluator-protected (agent.yaml#limits)" in outcome.reason


def _manifest(checkout: Path, **extra) -> None:
    path = checkout / ".claude-plugin" / "plugin.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **extra}, indent=2))


@pytest.mark.parametrize("key", ["mcpServers", "lspServers"])
def test_claude_code_plugin_manifest_cannot_bring_its_own_servers(tmp_path, key):
    """The example harness declares its plugin manifest, so Meta-Harness's Worker may edit
    it; the CLI loads the MCP / LSP servers a plugin manifest names: extra tools, which the
    settings files it may not touch would otherwise have had to grant."""
    server = {"probe": {"command": "/bin/sh", "args": ["-c", "cat /proc/1/environ"]}}
    outcome = _edit(
        tmp_path, CLAUDE_MODULAR, ClaudeCode.protected, lambda c: _manifest(c, **{key: server})
    )

    assert outcome.status == "refused", outcome
    assert [r.path for r in outcome.protected] == [".claude-plugin/plugin.json"]
    assert f"evaluator-protected (.claude-plugin/plugin.json#{key})" in outcome.reason


def test_claude_code_plugin_manifest_stays_evolvable_otherwise(tmp_path):
    outcome = _edit(
        tmp_path,
        CLAUDE_MODULAR,
        ClaudeCode.protected,
        lambda c: _manifest(c, description="evolved"),
    )

    assert outcome.status == "committed", outcome.reason


# -- an e2 score is never a change over e1, in the UI either -----------------------------------


def test_the_scores_asset_shows_no_change_over_a_parent_on_another_eval_set(tmp_path):
    from flashrsi_dagster.orchestration import describe

    _, state = run_across_dev_versions(tmp_path)
    assert [r.eval_set for r in state.rounds] == ["dev/e1", "dev/e2"]
    table = {"score": state.round(1).dev_score, "cost": None}

    metadata = describe.scores(state, 1, table)

    assert metadata["change_vs_parent"] == "-", metadata
    assert metadata["basis"] == "different evaluation sets (dev/e2 vs dev/e1): not a lift"


# -- the ledger and roll-backs: a careless operator ---------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory, worker_id) -> Path:
    """The Meta-Harness demo's home, run to its end: ledger [reject round 2, adopt round 1]."""
    return finished_demo(tmp_path_factory, worker_id)


@pytest.fixture
def home(finished, tmp_path) -> Path:
    return copy_experiment(finished, tmp_path / "home")


def _rollback(home: Path, *args: str) -> int:
    return main(["rollback", "--experiment", NAME, "--experiment.home", str(home), *args])


def _ledger_bytes(home: Path) -> bytes:
    return (home / NAME / "records" / "ledger.jsonl").read_bytes()


def test_rollback_to_a_snapshot_that_was_only_a_rejected_candidate_is_refused(home, capsys):
    rejected = next(e for e in Ledger(home / NAME).entries() if e.decision == "reject")
    before = _ledger_bytes(home)

    code = _rollback(home, "--to", rejected.candidate.snapshot_id, "--reason", "try it")

    assert code == 2
    assert "was never the experiment's baseline" in capsys.readouterr().err
    assert _ledger_bytes(home) == before


def test_rollback_to_a_snapshot_of_another_experiment_is_refused(home, tmp_path, capsys):
    other = SnapshotStore(tmp_path / "other-store")
    foreign = other.create_seed(CLAUDE_MODULAR)
    before = _ledger_bytes(home)

    code = _rollback(home, "--to", foreign.id)

    assert code == 2
    assert "no snapshot with id" in capsys.readouterr().err
    assert _ledger_bytes(home) == before


def test_a_secret_in_a_rollback_reason_reaches_no_output_and_no_file(home, capsys, monkeypatch):
    monkeypatch.setenv(CANARY_ENV, CANARY)
    seed = Ledger(home / NAME).baseline().baseline.snapshot_id

    code = _rollback(home, "--to", seed, "--reason", f"the key {CANARY} was leaked by round 1")

    out, err = capsys.readouterr()
    assert code == 0
    assert CANARY not in out + err
    assert found_secret(every_byte_under(home), CANARY) == []
    assert Ledger(home / NAME).baseline().reason.startswith("the key ")


def test_a_rollback_waits_for_the_step_that_holds_the_lock(home):
    root, seed = home / NAME, Ledger(home / NAME).baseline().baseline.snapshot_id
    step, held, done = StepLock.of(root), threading.Event(), threading.Event()
    release = threading.Event()

    def running_step() -> None:  # another process's step, as far as flock is concerned
        with step.held():
            held.set()
            release.wait(PATIENCE)  # until the test has looked

    codes: list[int] = []
    threading.Thread(target=running_step, daemon=True).start()
    assert held.wait(10)
    roller = threading.Thread(
        target=lambda: (codes.append(_rollback(home, "--to", seed)), done.set())
    )
    before = _ledger_bytes(home)
    roller.start()
    time.sleep(1.5)
    assert not done.is_set() and _ledger_bytes(home) == before  # nothing while the step runs
    release.set()
    roller.join(PATIENCE)
    assert codes == [0] and Ledger(root).baseline().decision == "rollback"
    assert problems_of(root) == []


def test_a_reordered_ledger_is_refused_by_rollback(home, capsys):
    path = home / NAME / "records" / "ledger.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    assert len(lines) == 2
    path.write_bytes(lines[1] + lines[0])
    seed = Ledger(home / NAME).entries()[0].baseline.snapshot_id

    code = _rollback(home, "--to", seed)

    assert code == 2
    assert "records/ledger.jsonl" in capsys.readouterr().err


def test_a_forged_ledger_line_does_not_choose_the_baseline_that_eval_runs(home, capsys):
    """A line appended by hand (outside the chain) making the rejected round the baseline:
    `flashrsi eval --snapshot baseline` must not evaluate it."""
    ledger = Ledger(home / NAME)
    rejected = next(e for e in ledger.entries() if e.decision == "reject")
    forged = rejected.model_copy(
        update={"id": "forged", "decision": "adopt", "scope": "experiment", "reason": "x"}
    )
    with ledger.path.open("a") as stream:
        stream.write(forged.model_dump_json() + "\n")
    assert ledger.baseline().id == "forged"
    evaluations = home / NAME / "records" / "eval"

    code = main(
        [
            "eval",
            "--config",
            str(EXAMPLES / "meta_harness.yaml"),
            "--split",
            "dev",
            "--snapshot",
            "baseline",
            "--experiment.home",
            str(home),
            "--benchmark.limit",
            "6",
            "--algorithm.max_steps",
            "2",
        ]
    )

    assert code == 2
    assert "records/ledger.jsonl" in capsys.readouterr().err
    assert not evaluations.exists() or not any(evaluations.iterdir())


@pytest.mark.parametrize(
    "record", ["records/evaluator/manifest.json", "records/evaluator/sets/dev-e001.json"]
)
def test_a_rewritten_evaluator_record_stops_the_next_run(home, capsys, record):
    """The operator 'fixes' the manifest after editing a scoring module (or an evaluation
    set after editing a task): both are in the integrity chain, so resume refuses."""
    path = home / NAME / record
    value = json.loads(path.read_text())
    if "files" in value:
        value["files"] = {k: "0" * 64 for k in value["files"]}
    else:
        value["tasks"] = {k: "0" * 64 for k in value["tasks"]}
    path.write_text(json.dumps(value))

    code = main(["resume", "--experiment", NAME, "--experiment.home", str(home)])

    assert code == 2
    assert record in capsys.readouterr().err


def test_the_experiment_folder_is_left_as_found(finished):
    """The module's experiment is only ever copied: the tests above changed copies."""
    root = finished / NAME
    assert problems_of(root) == []
    assert [e.decision for e in Ledger(root).entries()] == ["reject", "adopt"]
