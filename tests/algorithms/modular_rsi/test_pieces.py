"""ModularRSI's pure pieces: the schedule, findings ranked per file, rollouts grouped per task
with the historical success, the budgeted summary, the protocol and the plan."""

from __future__ import annotations

import json

import pytest

from flashrsi_dagster.algorithms.modular_rsi.findings import rank_targets
from flashrsi_dagster.algorithms.modular_rsi.groups import group_rollouts, remember
from flashrsi_dagster.algorithms.modular_rsi.modules import module_problems, ordered
from flashrsi_dagster.algorithms.modular_rsi.protocol import (
    Finding,
    ProtocolError,
    read_findings,
    read_verdict,
)
from flashrsi_dagster.algorithms.modular_rsi.run import make_schedule
from flashrsi_dagster.algorithms.modular_rsi.summary import BudgetError, summarize
from flashrsi_dagster.records import Status, Trajectory


def run(task: str, ok: bool, text: str = "", answer: str = "x") -> Trajectory:
    return Trajectory(
        task_id=task,
        snapshot_id="s",
        status=Status.SUCCESS if ok else Status.FAILURE,
        score=1.0 if ok else 0.0,
        answer=answer,
        messages=[{"role": "user", "content": text or f"question of {task}"}],
    )


def test_each_epoch_shuffles_train_with_the_seed_and_cuts_batches():
    train = [f"t{i}" for i in range(7)]
    schedule = make_schedule(train, epochs=2, batch_size=3, seed=5)
    assert [len(b) for b in schedule.batches] == [3, 3, 1, 3, 3, 1]
    first, second = schedule.batches[:3], schedule.batches[3:]
    flat = [[task for batch in epoch for task in batch] for epoch in (first, second)]
    assert sorted(flat[0]) == sorted(train) == sorted(flat[1])
    assert first != second  # a new order each epoch
    assert make_schedule(train, 2, 3, 5).batches == schedule.batches
    assert make_schedule(train, 2, 3, 6).batches != schedule.batches


def test_findings_merge_per_file_and_rank_by_distinct_supporting_tasks():
    found = [
        Finding(file="a.py", tasks=("t1", "t1", "t2"), reason="r", change="c"),
        Finding(file="b.md", tasks=("t1", "t2", "t3"), reason="r", change="c"),
        Finding(file="a.py", tasks=("t2",), reason="again", change="c2"),
        Finding(file="c.py", tasks=("t4",), reason="r", change="c"),
    ]
    targets = rank_targets(found, edit_budget=2)
    assert [t.file for t in targets] == ["b.md", "a.py"]  # 3 tasks, then 2 (t2 counted once)
    assert targets[1].tasks == ("t1", "t2") and len(targets[1].findings) == 2
    assert [t.file for t in rank_targets(found, 5)] == ["b.md", "a.py", "c.py"]


def test_rollouts_group_per_task_and_an_all_failed_task_gets_its_earlier_success():
    memory = remember({}, [run("t1", True, answer="first"), run("t1", True, answer="later")])
    assert memory["t1"].answer == "first"  # the earliest success is kept
    groups = group_rollouts(
        [run("t1", False), run("t2", True), run("t2", False), run("t3", True), run("t1", False)],
        memory,
    )
    kinds = {g.task_id: (g.kind, g.earlier_success is not None) for g in groups}
    assert kinds == {
        "t1": ("all_failed", True),
        "t2": ("mixed", False),
        "t3": ("all_succeeded", False),
    }
    assert [g.task_id for g in groups] == ["t1", "t2", "t3"]
    assert "earlier success" in groups[0].aim


def test_the_summary_keeps_its_skeleton_and_cuts_texts_evenly_within_the_budget():
    long = "word " * 2000
    samples = [run("t1", ok, text=long) for ok in (True, False, False, True)]
    groups = group_rollouts([*samples, run("t2", False, text="short question")], {})
    whole = summarize(groups, 10**7)
    assert whole.count("#### ") == 5
    budget = 3000
    cut = summarize(groups, budget)
    assert len(cut) <= budget
    assert cut.count("#### ") == 3  # t1: one success, one failure; t2: its failure
    for kept in ("### task t1 · group mixed · 2 of 4", "### task t2 · group all_failed"):
        assert kept in cut
    assert "short question" in cut  # a short text stays whole, its share goes to the others
    with pytest.raises(BudgetError, match="prompt_budget"):
        summarize(groups, 200)


def test_the_summary_leaves_out_the_run_config_record_that_heads_each_trajectory():
    from flashrsi_dagster.agents.run_config import run_config_message
    from flashrsi_dagster.config.models import RoleConfig
    from flashrsi_dagster.records import Redactor

    config = RoleConfig(type="miniagent", llm={"model": "simulator/target-run-config"})
    head = run_config_message(config, "s", "target", Redactor())
    sample = run("t1", False)
    sample = sample.model_copy(update={"messages": [head, *sample.messages]})
    summary = summarize(group_rollouts([sample], {}), 10**7)
    assert "question of t1" in summary
    assert "simulator/target-run-config" not in summary and "schema_version" not in summary


def test_the_activation_gate_asks_whether_a_changed_statement_ran_or_a_changed_file_was_read():
    from flashrsi_dagster.algorithms.modular_rsi.gates import activation_gate, changed_statements

    old = b"import os\n\n\ndef run():\n    return 1\n"
    new = (
        b"import os\n\nLIMIT = 3\n\n\ndef run():\n    # why\n    return 2\n\n\n"
        b"def unused():\n    return 0\n"
    )
    # the constant, the changed return, the new function's body; never a header, blank or comment
    assert changed_statements(old, new) == {3, 8, 12}
    assert changed_statements(b"a = 1\nb = 2\nc = 3\n", b"a = 1\nc = 3\n") == {1, 2}

    def ran(opened: list[str], lines: dict | None) -> Trajectory:
        sample = run("t1", True)
        return sample.model_copy(
            update={"metadata": {"activation": {"opened": opened, "lines": lines}}}
        )

    changes = {"runtime/agent.py": frozenset({12}), "prompts/system.md": None}
    idle = activation_gate(ran(["prompts/system.md"], {"runtime/agent.py": [1, 3, 8]}), changes)
    assert not idle.passed and "runtime/agent.py (no changed statement ran)" in idle.reason
    unread = activation_gate(ran([], {"runtime/agent.py": [12]}), changes)
    assert not unread.passed and "prompts/system.md (never read)" in unread.reason
    assert activation_gate(ran(["prompts/system.md"], {"runtime/agent.py": [12]}), changes).passed
    unseen = activation_gate(run("t1", True), changes)  # an adapter that reports nothing
    assert unseen.passed and "not observed" in unseen.reason


def test_the_protocol_reads_fenced_json_and_refuses_anything_else():
    def one(file: str, tasks: list[str]) -> str:
        finding = {"file": file, "tasks": tasks, "reason": "r", "change": "c"}
        return json.dumps({"findings": [finding]})

    answer = f"Here:\n```json\n{one('a.py', ['t1'])}\n```"
    assert read_findings(answer, files=("a.py",), tasks={"t1"})[0].file == "a.py"
    for bad, match in [
        ("no json here", "without a JSON object"),
        (one("z.py", ["t1"]), "not one of"),
        (one("a.py", ["t9"]), "not in the batch"),
        (one("a.py", []), "tasks"),
        ("", "no answer"),
    ]:
        with pytest.raises(ProtocolError, match=match):
            read_findings(bad, files=("a.py",), tasks={"t1"})
    assert read_verdict('{"verdict": "reject", "reason": "off-module"}').verdict == "reject"
    with pytest.raises(ProtocolError):
        read_verdict('{"verdict": "maybe", "reason": "?"}')


def test_module_sets_are_whole_and_unmixed_and_files_exact():
    five = {
        m: ["runtime/agent.py"]
        for m in (
            "task_completion_detection",
            "agent_loop",
            "tool_use",
            "observation_management",
            "context_management",
        )
    }
    assert module_problems(five) == []
    assert ordered(five)[0] == "agent_loop"
    assert "missing" in module_problems({"prompt": ["CLAUDE.md"], "skill": ["s.md"]})[0]
    assert "not of this set" in module_problems({**five, "prompt": ["CLAUDE.md"]})[0]
    retired = module_problems({**five, "agent_loop": ["runtime/agent.py::run"]})
    assert "retired" in retired[0]
    assert "empty" in module_problems({**five, "tool_use": []})[0]
    assert "relative path" in module_problems({**five, "tool_use": ["../x.py"]})[0]
