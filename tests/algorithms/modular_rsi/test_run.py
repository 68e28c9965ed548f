"""ModularRSI end to end on the offline simulator, with a scripted Worker: independent
branches, gates, the merge with its reference folders, the promotion and the sealed test once.
The target is the real MiniAgent answering through `simulator/target`."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import yaml

from flashrsi_dagster import scratch
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.algorithms.base import Step, StepOrderError
from flashrsi_dagster.algorithms.modular_rsi.records import Layout
from flashrsi_dagster.algorithms.modular_rsi.run import ModularRSI
from flashrsi_dagster.config import load_config
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.llm.endpoints import offline_server
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import Trajectory, read_record
from flashrsi_dagster.rollouts.record import RolloutRecord
from tests.algorithms.modular_rsi.scripted import (
    MODULES,
    RULE,
    findings,
    verdict,
    write_config,
)
from tests.sabotage.helpers import say, script_model, shell, unique


def opened(tmp_path: Path, replies: list[dict], **algorithm) -> ModularRSI:
    name = unique("mrsi-worker")
    model = script_model(name)
    experiment = open_experiment(load_config(write_config(tmp_path, model, **algorithm)))
    algo = ModularRSI(experiment, log=lambda _: None)
    offline_server().add_script(name, replies)
    return algo


def test_one_accepted_branch_is_merged_promoted_and_tested_once(tmp_path):
    probe = opened(tmp_path / "probe", [say()])
    batch = probe.schedule.batches[0]
    replies = [
        findings(),  # agent_loop: nothing
        findings(),  # tool_use
        findings(),  # observation_management
        findings(
            {"file": "prompts/system.md", "tasks": [batch[0]], "reason": "r", "change": "c"},
            {
                "file": "prompts/system.md",
                "tasks": [batch[0], batch[1]],
                "reason": "r",
                "change": "c",
            },
        ),
        shell(f"printf '\\n{RULE}\\n' >> prompts/system.md"),
        say("added a rule"),
        verdict("accept"),
        findings(),  # task_completion_detection
        shell("ls .branches && cp .branches/context_management/prompts/system.md prompts/"),
        say("merged"),
        verdict("accept"),
    ]
    algo = opened(tmp_path, replies)
    state = algo.run()

    layout = algo.layout
    steps = {m: state.step(m, 0) for m in MODULES}
    assert [steps[m].status for m in MODULES] == [
        "no_change",
        "no_change",
        "no_change",
        "accepted",
        "no_change",
    ]
    accepted = steps["context_management"]
    assert [g.name for g in accepted.gates] == [
        "scope",
        "content",
        "compile",
        "review",
        "execution",
    ]
    assert all(g.passed for g in accepted.gates)
    seed = algo.seed()
    # every branch started from the seed, and the accepted one moved on
    assert {s.parent_id for s in steps.values()} == {seed.id}
    assert accepted.current_id != seed.id
    changed = algo.experiment.snapshots.changed_paths(seed, accepted.current_id)
    assert [c.path for c in changed] == ["prompts/system.md"]
    # the merge: reference folders never enter the snapshot
    merge = state.step("integration", 0)
    assert merge.status == "accepted" and merge.check is not None
    merged_files = algo.experiment.snapshots.changed_paths(seed, merge.current_id)
    assert [c.path for c in merged_files] == ["prompts/system.md"]
    worker = read_record(layout.step("integration", 0, "worker"), Trajectory)
    assert "context_management" in json.dumps(worker.messages)  # `ls .branches` showed it
    assert state.promotion is not None and state.promotion.snapshot_id == merge.current_id
    assert state.promotion.source == "final_merge"
    assert state.test is not None and state.test.test_tasks == 3
    assert len(RolloutRecord(layout.test_rollouts).load()) == 3
    # the batch ran num_rollouts x tasks on the branch's version; no dev or test task in it
    rollouts = RolloutRecord(layout.rollouts("context_management", 0)).load()
    assert sorted(t.task_id for t in rollouts) == sorted(batch)
    assert algo.next().action == "done"


def test_flashrsi_run_drives_it_to_the_sealed_test_and_resume_adds_nothing(tmp_path, capsys):
    from flashrsi_dagster.cli import main

    # The branches are ready at once, so `flashrsi run` queues them: each runs in a run
    # worker process of its own, which reaches the Worker's script over HTTP like any endpoint.
    name = unique("mrsi-cli")
    with OfflineModelServer(ServerConfig(scripts={name: [findings()] * 5})) as simulator:
        llm = {"model": f"simulator/script:{name}", "base_url": simulator.url, "timeout": 30}
        path = write_config(tmp_path, llm["model"], worker={"llm": llm})
        assert main(["run", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "== branch (round 0, agent_loop) (queued)" in out and "== integrate" not in out
    assert "promoted: " in out and "(seed): no branch changed the seed" in out
    assert "sealed test: " in out
    layout = Layout.of(tmp_path / "home" / "mrsi" / "records")
    test_record = layout.test.read_bytes()
    assert (
        main(["resume", "--experiment", "mrsi", "--experiment.home", str(tmp_path / "home")]) == 0
    )
    assert layout.test.read_bytes() == test_record  # the sealed test ran once


def _first_module_edits(
    tmp_path, edit: list[dict], after_edit: list[dict], **algorithm
) -> ModularRSI:
    """agent_loop finds something and the Worker runs `edit`; `after_edit` follows (the
    review's answer, say); the other four modules find nothing."""
    probe = opened(tmp_path / "probe", [say()])
    task = probe.schedule.batches[0][0]
    finding = {"file": "runtime/agent.py", "tasks": [task], "reason": "r", "change": "c"}
    replies = [findings(finding), *edit, *after_edit, *[findings()] * 4]
    return opened(tmp_path, replies, **algorithm)


@pytest.mark.parametrize(
    ("edit", "after", "gate", "why"),
    [
        ([shell("echo x >> prompts/system.md"), say()], [], "scope", "outside the module"),
        ([shell("echo 'def (' >> runtime/agent.py"), say()], [], "compile", "SyntaxError"),
        (
            [shell("echo '# tidy' >> runtime/agent.py"), say()],
            [verdict("reject", "unrelated to the loop")],
            "review",
            "unrelated to the loop",
        ),
        (
            [shell("echo 'raise RuntimeError(\"boom\")' >> runtime/agent.py"), say()],
            [verdict("accept")],
            "execution",
            "ended error",
        ),
    ],
)
def test_a_rejected_candidate_keeps_the_previous_version(tmp_path, edit, after, gate, why):
    algo = _first_module_edits(tmp_path, edit, after)
    state = algo.run()
    step = state.step("agent_loop", 0)
    assert step.status == "rejected" and step.reason.startswith(f"{gate} gate")
    assert why in step.reason
    assert step.gates[-1].name == gate and not step.gates[-1].passed
    assert all(g.passed for g in step.gates[:-1])
    seed = algo.seed().id
    assert step.current_id == seed and step.candidate_id not in (None, seed)
    # the next module still starts from the seed, and nothing is merged: the seed is promoted
    assert state.step("tool_use", 0).parent_id == seed
    assert state.step("integration", 0) is None
    assert state.promotion.snapshot_id == seed and state.promotion.source == "seed"


DROP_LAST = "sed -i '$ d' runtime/agent.py"


def test_with_the_activation_gate_an_edit_whose_code_never_ran_is_rejected(tmp_path):
    """`activation_gate: true` (the official code's rule): agent_loop adds a function nothing
    calls and is rejected; tool_use's module-level statement ran at import and
    context_management's prompt rule was read, so both are accepted. What ran is what the
    framework's entry saw (`metadata["activation"]`), not what the harness says."""
    probe = opened(tmp_path / "probe", [say()])
    task = probe.schedule.batches[0][0]

    def finding(file: str) -> dict:
        return findings({"file": file, "tasks": [task], "reason": "r", "change": "c"})

    dead = "printf '\\ndef never_called():\\n    return 1\\n' >> runtime/agent.py"
    live = "printf '\\nSHELL_NOTE = 1\\n' >> tools/shell.py"
    replies = [
        *(finding("runtime/agent.py"), shell(dead), say(), verdict("accept")),
        *(finding("tools/shell.py"), shell(live), say(), verdict("accept")),
        findings(),
        finding("prompts/system.md"),
        shell(f"printf '\\n{RULE}\\n' >> prompts/system.md"),
        *(say(), verdict("accept")),
        findings(),
        *(
            shell(f"{MERGE} && cp .branches/tool_use/tools/shell.py tools/"),
            say(),
            verdict("accept"),
        ),
    ]
    algo = opened(tmp_path, replies, activation_gate=True)
    state = algo.run()
    rejected = state.step("agent_loop", 0)
    assert rejected.status == "rejected", rejected.reason
    assert rejected.reason.startswith("activation gate") and "runtime/agent.py" in rejected.reason
    assert [g.name for g in rejected.gates][-2:] == ["execution", "activation"]
    for module in ("tool_use", "context_management"):
        step = state.step(module, 0)
        assert step.status == "accepted", step.reason
        assert step.gates[-1].name == "activation" and step.gates[-1].passed
    (run,) = RolloutRecord(algo.layout.execution("context_management", 0)).load()
    seen = run.metadata["activation"]
    assert "prompts/system.md" in seen["opened"] and seen["lines"]["runtime/agent.py"]
    assert state.promotion is not None and state.promotion.source == "final_merge"


@pytest.mark.slow
def test_a_compile_or_review_finding_is_repaired_by_the_worker_up_to_gate_repairs(tmp_path):
    """`gate_repairs: 2` (the official code's bound): an edit that does not compile, repaired
    into one the review turns down, repaired again into one it accepts, is accepted; with
    `gate_repairs: 1` the review's finding stands and the previous version is kept."""
    broken = [shell("echo 'def (' >> runtime/agent.py"), say()]
    first_fix = [shell(f"{DROP_LAST} && echo '# tidy' >> runtime/agent.py"), say()]
    second_fix = [shell(f"{DROP_LAST} && echo '# the loop ends at max_turns' >> runtime/agent.py")]
    repairs = [
        *first_fix,
        verdict("reject", "a bare comment"),
        *second_fix,
        say(),
        verdict("accept"),
    ]
    algo = _first_module_edits(tmp_path / "two", broken, repairs, gate_repairs=2)
    state = algo.run()
    step = state.step("agent_loop", 0)
    assert step.status == "accepted", step.reason
    assert [(g.name, g.reason) for g in step.repaired] == [
        ("compile", step.repaired[0].reason),
        ("review", "a bare comment"),
    ]
    assert "SyntaxError" in step.repaired[0].reason
    assert [g.name for g in step.gates] == ["scope", "content", "compile", "review", "execution"]
    store, seed = algo.experiment.snapshots, algo.seed()
    merged = store.read_file_at(step.current_id, "runtime/agent.py").decode()
    assert merged.endswith("# the loop ends at max_turns\n") and "def (" not in merged
    assert step.parent_id == seed.id
    assert [c.path for c in store.changed_paths(seed, step.current_id)] == ["runtime/agent.py"]
    names = [p.name for p in algo.layout.repairs("agent_loop", 0)]
    assert "step-000-repair-1-worker.json" in names and "step-000-repair-2-review.json" in names
    told = json.dumps(
        read_record(algo.layout.step("agent_loop", 0, "repair-1-worker"), Trajectory).messages
    )
    assert "compile check turned down" in told and "SyntaxError" in told

    once = [*first_fix, verdict("reject", "a bare comment")]
    algo = _first_module_edits(tmp_path / "one", broken, once, gate_repairs=1)
    step = algo.run().step("agent_loop", 0)
    assert step.status == "rejected" and step.reason == "review gate: a bare comment"
    assert [g.name for g in step.repaired] == ["compile"]
    assert step.current_id == algo.seed().id


@pytest.mark.parametrize(
    ("replies", "retries", "why"),
    [
        ([say("I looked; nothing in JSON")], 0, "without a JSON object"),
        ([say("I looked; nothing in JSON")] * 3, 2, "(3 answers, none readable)"),
        ([{"error": 500}] * 12, 2, "analysis failed"),
    ],
)
def test_a_protocol_error_or_a_worker_failure_aborts_with_the_records_kept(
    tmp_path, replies, retries, why
):
    """`answer_retries: 0` is the seed's rule as written: the first malformed answer aborts.
    With retries, only the last of them does, and every answer is kept."""
    algo = opened(tmp_path, replies, answer_retries=retries)
    state = algo.run()
    step = state.step("agent_loop", 0)
    assert step.status == "aborted" and why in step.reason
    assert algo.next().action == "aborted"
    assert state.promotion is None and state.test is None
    assert algo.layout.rollouts("agent_loop", 0).exists()  # the batch's evidence is kept
    assert algo.layout.step("agent_loop", 0, "analysis").exists()
    if why.startswith("(3 answers"):
        malformed = algo.layout.malformed("agent_loop", 0)
        assert [p.name for p in malformed] == [
            "step-000-analysis-malformed-1.json",
            "step-000-analysis-malformed-2.json",
        ]
    with pytest.raises(StepOrderError, match="aborted"):
        algo.promote()


MALFORMED = [
    findings({"file": "runtime/agent.py", "tasks": ["not-a-task"], "reason": "r", "change": "c"}),
    say('```json\n{"verdict": "maybe", "reason": "unsure"}\n```'),
    say("Looks fine to me, accept."),
]
"""Three ways an answer breaks the protocol: a finding citing a task outside the batch, a
verdict that is neither accept nor reject, prose without JSON."""


def _one_in_five_malformed(replies: list[dict], structured: set[int]) -> list[dict]:
    """`replies` with a malformed answer before every fourth structured one (`structured`:
    the indexes of the analyses' and reviews' answers), so that one structured answer in five
    is malformed: a finding, a verdict and prose in turn."""
    out, seen, bad = [], 0, iter(MALFORMED * len(replies))
    for i, reply in enumerate(replies):
        if i in structured:
            seen += 1
            if seen % 4 == 0:
                out.append(next(bad))
        out.append(reply)
    return out


@pytest.mark.slow
def test_one_answer_in_five_malformed_is_retried_to_the_promotion_of_a_clean_run(tmp_path):
    """Two batches per branch (12 analyses and reviews); 3 of the 15 answers read are
    malformed, each asked again with its parse error: the run completes with the clean run's
    promotion, and every malformed answer is on record."""
    probe = opened(tmp_path / "probe", [say()], batch_size=2)
    task = probe.schedule.batches[0][0]
    finding = {"file": "prompts/system.md", "tasks": [task], "reason": "r", "change": "c"}
    clean = [
        *[findings()] * 6,  # agent_loop, tool_use, observation_management: two batches each
        findings(finding),
        shell(f"printf '\\n{RULE}\\n' >> prompts/system.md"),
        say(),
        verdict("accept"),
        *[findings()] * 3,  # context_management's second batch, task_completion_detection
        shell(MERGE),
        say("merged"),
        verdict("accept"),
    ]
    structured = {i for i, r in enumerate(clean) if "tool_calls" not in r and r != say()}
    structured -= {clean.index(say("merged"))}
    faulty = _one_in_five_malformed(clean, structured)
    assert len(faulty) - len(clean) == 3 and (len(structured) + 3) == 15

    runs = {}
    for name, replies in (("clean", clean), ("faulty", faulty)):
        algo = opened(tmp_path / name, replies, batch_size=2)
        runs[name] = (algo, algo.run())
    (clean_algo, clean_state), (algo, state) = runs["clean"], runs["faulty"]
    assert state.promotion is not None and state.test is not None
    tree = lambda a, s: a.experiment.snapshots.get(s.promotion.snapshot_id).tree  # noqa: E731
    assert tree(algo, state) == tree(clean_algo, clean_state)
    assert state.promotion.source == clean_state.promotion.source == "final_merge"
    assert _branch_records(algo) == _branch_records(clean_algo)
    malformed = [
        p.relative_to(algo.layout.folder).as_posix()
        for slot in (*MODULES, "integration")
        for k in (0, 1)
        for p in algo.layout.malformed(slot, k)
    ]
    assert malformed == [
        "tool_use/step-001-analysis-malformed-1.json",
        "context_management/step-000-review-malformed-1.json",
        "integration/step-000-review-malformed-1.json",
    ]
    retried = read_record(algo.layout.step("tool_use", 1, "analysis"), Trajectory)
    told = json.dumps(retried.messages)
    assert "could not be read" in told and "not-a-task" in told  # the parse error went back


def test_the_reference_folders_are_gone_even_when_the_merge_fails(tmp_path):
    probe = opened(tmp_path / "probe", [say()])
    task = probe.schedule.batches[0][0]
    finding = {"file": "prompts/system.md", "tasks": [task], "reason": "r", "change": "c"}
    replies = [
        findings(),
        findings(),
        findings(),
        findings(finding),
        shell(f"printf '\\n{RULE}\\n' >> prompts/system.md"),
        say(),
        verdict("accept"),
        findings(),
        shell("cp -r .branches copied && ls .branches"),
        *[{"error": 500}] * 12,  # the Worker's model fails mid-merge
    ]
    algo = opened(tmp_path, replies)
    state = algo.run()
    merge = state.step("integration", 0)
    assert merge.status == "aborted" and "Worker's edit failed" in merge.reason
    for where in (tmp_path / "home", scratch.process_dir()):
        assert not [p for p in where.rglob("*") if p.name in (".branches", "copied")]
    worker = read_record(algo.layout.step("integration", 0, "worker"), Trajectory)
    assert "context_management" in json.dumps(worker.messages)  # the references were there


def test_the_offline_demo_rejects_and_accepts_edits_and_merges_a_shared_file(tmp_path):
    """`examples/modular_rsi.yaml` with the simulator's ModularRSI Worker policy."""
    example = Path(__file__).parents[3] / "examples" / "modular_rsi.yaml"
    config = load_config(example, ["--experiment.home", str(tmp_path / "home")])
    algo = ModularRSI(open_experiment(config), log=lambda _: None)
    state = algo.run()
    statuses = {(s.slot, s.status) for s in state.steps.values()}
    assert ("agent_loop", "rejected") in statuses and ("context_management", "accepted") in statuses
    rejected = state.step("agent_loop", 0)
    assert rejected.reason.startswith("review gate") and "responsibility" in rejected.reason
    # a branch continues from its accepted candidate, edited again in a fresh checkout of it
    first, second = state.step("context_management", 0), state.step("context_management", 1)
    assert first.status == "accepted" and second.parent_id == first.current_id
    store, seed = algo.experiment.snapshots, algo.seed()
    sharing = [
        m
        for m in ("context_management", "task_completion_detection")
        if "runtime/agent.py"
        in [c.path for c in store.changed_paths(seed, state.current(m, 99, seed.id))]
    ]
    assert len(sharing) == 2  # two branches changed the shared file
    merge = state.step("integration", 0)
    assert merge.status == "accepted" and merge.check is not None and merge.check.passed
    merged = store.read_file_at(merge.current_id, "runtime/agent.py").decode()
    for module in sharing:
        branch = store.read_file_at(state.current(module, 99, seed.id), "runtime/agent.py").decode()
        added = set(branch.splitlines()) - set(
            store.read_file_at(seed, "runtime/agent.py").decode().splitlines()
        )
        assert added and added <= set(merged.splitlines())  # each branch's lines are in the merge
    assert state.promotion is not None and state.test is not None and state.test.test_tasks == 9


def _branch_then(tmp_path, integration: list[dict], **algorithm) -> ModularRSI:
    """context_management accepts one prompt rule (the others find nothing); then the
    integration's Worker replies `integration` (merge, review, repair, …)."""
    probe = opened(tmp_path / "probe", [say()])
    task = probe.schedule.batches[0][0]
    finding = {"file": "prompts/system.md", "tasks": [task], "reason": "r", "change": "c"}
    branches = [
        findings(),
        findings(),
        findings(),
        findings(finding),
        shell(f"printf '\\n{RULE}\\n' >> prompts/system.md"),
        say(),
        verdict("accept"),
        findings(),
    ]
    return opened(tmp_path, [*branches, *integration], **algorithm)


BREAK = "printf 'raise RuntimeError(\"the merge broke\")\\n' >> runtime/agent.py"
MERGE = "cp .branches/context_management/prompts/system.md prompts/"


def test_a_merge_that_breaks_is_repaired_from_the_branch_references(tmp_path):
    integration = [
        shell(f"{MERGE} && {BREAK}"),
        say("merged"),
        verdict("accept"),
        shell("cp .branches/context_management/runtime/agent.py runtime/agent.py"),
        say("repaired"),
        verdict("accept"),
    ]
    algo = _branch_then(tmp_path, integration, integration_rounds=1)
    state = algo.run()
    merge, repair = state.step("integration", 0), state.step("integration", 1)
    assert merge.phase == "merge" and merge.status == "accepted" and merge.more
    assert merge.check is not None and len(merge.check.runtime_errors) == merge.check.tasks
    assert repair.phase == "repair" and repair.parent_id == merge.current_id
    assert repair.check is not None and repair.check.passed
    worker = read_record(algo.layout.step("integration", 1, "worker"), Trajectory)
    told = json.dumps(worker.messages)
    assert "Runs that broke" in told  # the repair was told what broke, and the runs' evidence:
    assert "group all_failed" in told and "the merge broke" in told
    assert state.promotion.source == "final_merge"
    assert state.promotion.snapshot_id == repair.current_id


def test_a_merge_that_still_breaks_falls_back_to_the_seed(tmp_path):
    integration = [shell(f"{MERGE} && {BREAK}"), say(), verdict("accept"), say("cannot fix")]
    algo = _branch_then(tmp_path, integration, integration_rounds=1)
    state = algo.run()
    assert state.step("integration", 1).status == "no_change"
    assert state.promotion.source == "seed" and state.promotion.snapshot_id == algo.seed().id
    assert "still breaks" in state.promotion.reason
    assert state.test is not None and state.test.snapshot_id == algo.seed().id


def test_the_promotion_rule_last_merge_then_the_initial_merge_then_seed():
    from flashrsi_dagster.algorithms.modular_rsi.plan import State
    from flashrsi_dagster.algorithms.modular_rsi.records import Check, StepRecord
    from flashrsi_dagster.algorithms.modular_rsi.run import choose

    def merge(k: int, version: str, broken: list[str]) -> StepRecord:
        check = Check(snapshot_id=version, score=0.5, tasks=2, runtime_errors=broken, failed=[])
        return StepRecord(
            slot="integration",
            round=k,
            phase="merge" if k == 0 else "repair",
            status="accepted",
            parent_id="p",
            current_id=version,
            reason="r",
            check=check,
        )

    branch = StepRecord(
        slot="prompt",
        round=0,
        phase="branch",
        status="accepted",
        parent_id="seed",
        current_id="b",
        reason="r",
    )
    modules = ("prompt", "skill", "hook")

    def chosen(*merges: StepRecord):
        steps = {("prompt", 0): branch, **{("integration", m.round): m for m in merges}}
        return choose(State(steps, None, None), modules, "seed")

    last = chosen(merge(0, "m0", []), merge(1, "m1", []))
    assert (last.snapshot_id, last.source) == ("m1", "final_merge")
    first = chosen(merge(0, "m0", []), merge(1, "m1", ["t1"]))
    assert (first.snapshot_id, first.source) == ("m0", "initial_merge")
    none = chosen(merge(0, "m0", ["t1"]), merge(1, "m1", ["t2"]))
    assert (none.snapshot_id, none.source) == ("seed", "seed")
    # seed 001: the initial merge, never a repair that passed before a later one broke
    repaired = chosen(merge(0, "m0", ["t1"]), merge(1, "m1", []), merge(2, "m2", ["t2"]))
    assert (repaired.snapshot_id, repaired.source) == ("seed", "seed")
    assert "initial merge did not pass" in repaired.reason
    assert chosen().source == "seed" and chosen().branches["prompt"] == "b"


def test_the_worker_keeps_its_own_harness_and_branches_share_no_memory(tmp_path):
    algo = _branch_then(tmp_path, [shell(MERGE), say(), verdict("accept")], integration_rounds=0)
    state = algo.run()
    worker, target = algo.agent("worker"), algo.agent("target")
    assert worker.files_dir == HARNESS.resolve()  # never the target's candidate
    assert target.snapshot_id != algo.seed().id  # the target ran the merged version last
    for module in MODULES:
        rollouts = RolloutRecord(algo.layout.rollouts(module, 0)).load()
        assert algo.memory(module, before=0) == {}
        remembered = algo.memory(module, before=1)
        assert set(remembered) <= {t.task_id for t in rollouts}
        assert all(t in rollouts for t in remembered.values())  # its own batch's runs only
    assert state.promotion.source == "final_merge"


def test_native_protocol_the_five_places_of_the_shared_runtime_file_evolve_and_merge(tmp_path):
    """Real MiniAgent subprocesses and the openai SDK with file tools, answered by the
    simulator's ModularRSI Worker policy; a reviewer that accepts every diff, so each of the
    five functional places in MiniAgent's runtime is changed on its branch and merged."""
    example = yaml.safe_load(
        (Path(__file__).parents[3] / "examples" / "modular_rsi.yaml").read_text()
    )
    reviewer = script_model(unique("accept-all"), [verdict("accept", "in scope")] * 12)
    example["algorithm"].update(
        review_by="reviewer",
        reviewer={"type": "miniagent", "llm": {"model": reviewer, "base_url": "offline"}},
        batch_size=6,
        num_rollouts=1,
        integration_rounds=0,
    )
    path = tmp_path / "five.yaml"
    path.write_text(yaml.safe_dump(example, sort_keys=False))
    config = load_config(path, ["--experiment.home", str(tmp_path / "home")])
    algo = ModularRSI(open_experiment(config), log=lambda _: None)
    state = algo.run()
    store, seed = algo.experiment.snapshots, algo.seed()
    changed = {m: state.current(m, 1, seed.id) for m in algo.modules if state.changed(m)}
    assert set(changed) == set(algo.modules)  # every module's place was changed
    merge = state.step("integration", 0)
    assert merge.status == "accepted" and merge.check is not None and merge.check.passed
    for path in ("runtime/agent.py", "runtime/tool_result.py"):
        base = set(store.read_file_at(seed, path).decode().splitlines())
        merged = store.read_file_at(merge.current_id, path).decode()
        compile(merged, path, "exec")  # compiled, never imported
        for module, version in changed.items():
            added = set(store.read_file_at(version, path).decode().splitlines()) - base
            assert added <= set(merged.splitlines()), (module, path)
    assert state.promotion.source == "final_merge" and state.test is not None


def test_a_batch_that_breaks_as_a_whole_is_evidence_for_the_analysis_blaming_no_task(tmp_path):
    """The target cannot be started for the first batch (its rollouts never run): the step
    goes on to the analysis with the fault as evidence, and the experiment continues."""
    from flashrsi_dagster.agents import target_agent
    from flashrsi_dagster.algorithms.builders import Builders
    from flashrsi_dagster.algorithms.modular_rsi.records import FindingsRecord

    calls = []

    def flaky_target(config, files_dir, *, confinement):
        calls.append(files_dir)
        if len(calls) == 1:
            raise RuntimeError("the target's environment did not come up")
        return target_agent(config, files_dir, confinement=confinement)

    name = unique("mrsi-worker")
    config = load_config(write_config(tmp_path, script_model(name)))
    algo = ModularRSI(
        open_experiment(config), builders=Builders(target=flaky_target), log=lambda _: None
    )
    offline_server().add_script(name, [findings()] * 5)
    state = algo.run()
    assert state.step("agent_loop", 0).status == "no_change"  # the experiment goes on
    found = read_record(algo.layout.step("agent_loop", 0, "findings"), FindingsRecord)
    assert "did not come up" in (found.batch_error or "")
    analysis = read_record(algo.layout.step("agent_loop", 0, "analysis"), Trajectory)
    assert "failed as a whole, blaming no single task" in json.dumps(analysis.messages)
    assert state.step("tool_use", 0).status == "no_change" and state.test is not None


def _branch_records(algo: ModularRSI) -> dict:
    """What the branches decided, free of clocks and snapshot ids (trees instead)."""
    store, state = algo.experiment.snapshots, algo.read_state()
    tree = lambda sid: store.get(sid).tree if sid else None  # noqa: E731
    return {
        key: (r.status, r.reason, tree(r.parent_id), tree(r.current_id), r.tasks)
        for key, r in state.steps.items()
    }


@pytest.mark.slow
def test_the_branches_run_side_by_side_to_the_records_of_one_after_another(tmp_path):
    """The offline demo's branch phase (one batch of the whole train split, one rollout per
    task): each branch's step at once, each in a thread of its own with its own opening (as
    separate runs would), matches the branches run one after another; every ledger entry is
    there once."""
    example = Path(__file__).parents[3] / "examples" / "modular_rsi.yaml"
    small = ["--algorithm.batch_size", "6", "--algorithm.num_rollouts", "1"]

    def opened_at(home: Path) -> ModularRSI:
        config = load_config(example, ["--experiment.home", str(home), *small])
        return ModularRSI(open_experiment(config), log=lambda _: None)

    sequential = opened_at(tmp_path / "sequential")
    sequential.run(until="integrate")
    side = opened_at(tmp_path / "side-by-side")
    waves = []
    while (ready := side.ready_steps(side.read_state()))[0].action == "branch":
        waves.append(len(ready))
        failed: list[BaseException] = []

        def take(step, failed=failed) -> None:
            algo = opened_at(tmp_path / "side-by-side")
            try:
                algo.do(step)
            except BaseException as exc:  # failed below, in the test
                failed.append(exc)
            finally:
                algo.close()

        threads = [threading.Thread(target=take, args=(step,)) for step in ready]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not failed, failed
    assert waves == [5]  # five branches at once
    assert ready == (Step("integrate", 0, "integration"),)

    assert _branch_records(side) == _branch_records(sequential)
    entries = [(d.id, d.decision, d.scope) for d in Ledger.of(side.experiment).entries()]
    assert len({e[0] for e in entries}) == len(entries)
    assert sorted(entries) == sorted(
        (d.id, d.decision, d.scope) for d in Ledger.of(sequential.experiment).entries()
    )
    side.experiment.records.verify()
