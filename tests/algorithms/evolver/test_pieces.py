"""The Evolver's pure pieces, each against figures worked by hand: termination by patience
(errored rounds use none), the three screen buckets at 1.5 sigma, the budget cap on WHYs and
candidates, WHY decay and the formula fallback with its shadow log, WHERE bound from files."""

from __future__ import annotations

import json
import math

import pytest

from flashrsi_dagster.algorithms.evolver.choose import (
    Budget,
    WhyHistory,
    choose_whys,
    decay,
    formula_ranking,
)
from flashrsi_dagster.algorithms.evolver.screen import screen
from flashrsi_dagster.algorithms.evolver.termination import Termination
from flashrsi_dagster.algorithms.evolver.where import bind_where, cell_of
from flashrsi_dagster.snapshots import Components


def test_patience_counts_rounds_without_a_win_over_vanilla_and_ignores_errored_rounds():
    stop = Termination(patience=3, max_rounds=20, max_consecutive_errors=3).stop
    assert stop(["no_gain", "no_gain"]) is None
    assert stop(["no_gain", "no_gain", "no_gain"]) == "patience"
    assert stop(["no_gain", "errored", "no_gain", "errored", "no_gain"]) == "patience"
    assert stop(["no_gain", "errored", "errored", "no_gain"]) is None  # 2 idle rounds only
    assert stop(["no_gain", "no_gain", "beat_vanilla", "no_gain"]) is None  # a win resets it
    assert stop(["errored"] * 3) == "consecutive_errors"
    assert stop(["errored", "errored", "no_gain", "errored"]) is None
    assert Termination(patience=10, max_rounds=4).stop(["beat_vanilla"] * 4) == "max_rounds"


def test_the_screen_sorts_into_three_buckets_at_one_and_a_half_sigma():
    baseline = {"a": 0.5, "b": 0.5, "c": 1.0, "d": 0.0}
    # sigma = sqrt(0.25 + 0.25 + 0 + 0) / 4 = 0.17678; the band is +-0.26517
    sigma = math.sqrt(0.5) / 4
    worse = screen({"a": 0, "b": 0, "c": 1, "d": 0}, baseline)  # delta = -0.25: inside the band
    assert worse.bucket == "within_band" and worse.sigma == pytest.approx(sigma, abs=1e-12)
    culled = screen({"a": 0, "b": 0, "c": 0, "d": 0}, baseline)  # delta = -0.5
    assert culled.bucket == "cull" and culled.stopped
    won = screen({"a": 1, "b": 1, "c": 1, "d": 0}, baseline)  # delta = +0.25: inside
    assert won.bucket == "within_band"
    assert screen({"a": 1, "b": 1, "c": 1, "d": 1}, baseline).bucket == "clear_win"  # +0.5
    assert screen({"a": 0, "b": 1, "c": 1, "d": 0}, baseline, threshold=0.5).bucket == "within_band"
    steady = {"c": 1.0, "d": 0.0}  # sigma 0: any loss culls, any gain is a clear win
    assert screen({"c": 0, "d": 0}, steady).bucket == "cull"
    assert screen({"c": 1, "d": 1}, steady).bucket == "clear_win"
    assert screen({"c": 1, "d": 0}, steady).bucket == "within_band"
    with pytest.raises(ValueError, match="without both"):
        screen({"a": 1}, baseline)


def test_the_budget_caps_whys_and_candidates_in_code():
    budget = Budget(max_why_per_round=2, candidates_per_why=3)
    assert budget.candidates == 6
    assert budget.slots() == ("w1c1", "w1c2", "w1c3", "w2c1", "w2c2", "w2c3")
    for bad in ({"max_why_per_round": 3}, {"candidates_per_why": 1}, {"candidates_per_why": 4}):
        with pytest.raises(ValueError):
            Budget(**bad)
    failing = {"tool_misuse": 5, "premature_stop": 3, "format": 2}
    chosen = choose_whys(["format", "tool_misuse", "premature_stop"], failing, {}, budget)
    assert chosen.whys == ("format", "tool_misuse") and chosen.source == "model"
    assert "cut to 2" in chosen.note
    assert [w for w, _ in chosen.shadow] == ["tool_misuse", "premature_stop", "format"]


def test_why_decay_and_the_formula_fallback():
    assert decay(WhyHistory(failed=2, inert=1)) == pytest.approx(0.55**2 * 0.85, abs=1e-15)
    failing = {"a": 4, "b": 3, "c": 0}
    history = {"a": WhyHistory(failed=1)}  # 4 * 0.55 = 2.2 < 3
    assert formula_ranking(failing, history) == [("b", 3.0), ("a", pytest.approx(2.2))]
    budget = Budget(max_why_per_round=1, candidates_per_why=2)
    fallback = choose_whys(["nonsense"], failing, history, budget)
    assert fallback.whys == ("b",) and fallback.source == "formula"
    assert "no usable WHY" in fallback.note
    assert choose_whys(None, failing, history, budget).note == "no model pick"


def test_where_is_bound_from_the_changed_files_roles():
    components = Components.parse(
        {
            "prompt": ["prompts/**"],
            "skill": ["skills/**"],
            "code": ["runtime/**"],
            "config": ["a.yaml"],
        }
    )
    assert bind_where(["prompts/system.md", "skills/x/SKILL.md"], components) == "prompt"
    assert bind_where(["runtime/agent.py"], components) == "runtime"
    assert bind_where(["runtime/agent.py", "prompts/system.md"], components) == "mixed"
    assert bind_where(["a.yaml", "prompts/system.md"], components) == "edit"
    assert cell_of("prompt", "format") == "prompt:format"
    with pytest.raises(ValueError):
        bind_where([], components)


def test_the_gates_run_in_order_with_a_fixed_denominator_and_infra_failures_at_zero():
    from flashrsi_dagster.algorithms.evolver.confirm_gates import Confirmed, run_gates

    tasks = ["t1", "t2", "t3", "t4"]
    vanilla = Confirmed({t: [1, 0, 0] for t in tasks})  # 4/12
    # t4's first attempt failed on infrastructure: scored 0, kept in the denominator
    candidate = Confirmed(
        {"t1": [1, 1, 0], "t2": [1, 0, 0], "t3": [0, 0, 0], "t4": [0, 1, 0]}, infra=["t4"]
    )  # 4/12: not above vanilla
    verdicts = run_gates(candidate, vanilla, tasks, 3, fired=None)
    assert [v.name for v in verdicts] == ["gate_f", "gate_b", "gate_2"]
    assert verdicts[0].passed and "t4" in verdicts[0].reason and "4 x 3" in verdicts[0].reason
    assert "no beacon data" in verdicts[1].reason and verdicts[1].passed
    assert not verdicts[2].passed and "0.3333" in verdicts[2].reason
    better = Confirmed({**candidate.scores, "t3": [1, 0, 0]}, infra=["t4"])  # 5/12
    assert run_gates(better, vanilla, tasks, 3, fired=None)[-1].passed
    inert = run_gates(better, vanilla, tasks, 3, fired=[])
    assert [v.name for v in inert] == ["gate_f", "gate_b"] and not inert[-1].passed
    assert run_gates(better, vanilla, tasks, 3, fired=["t3", "elsewhere"])[1].passed
    with pytest.raises(ValueError, match="incomplete"):
        run_gates(Confirmed({"t1": [1]}), vanilla, tasks, 3, fired=None)


def test_the_anchor_is_mostly_affinity_plus_icebreakers_and_sentinels_all_from_train():
    from flashrsi_dagster.algorithms.evolver.anchor import select_anchor

    train = [f"t{i}" for i in range(12)]
    rates = {t: (0.0 if i < 4 else 1.0 if i >= 8 else 0.5) for i, t in enumerate(train)}
    anchor = select_anchor(rates, ["t4", "t5", "t6", "t0"], train, size=6, seed="s")
    assert len(anchor.affinity) == 4 and set(anchor.affinity) <= {"t4", "t5", "t6", "t0"}
    assert set(anchor.icebreakers) <= {"t1", "t2", "t3"} and len(anchor.icebreakers) == 1
    assert set(anchor.sentinels) <= {"t8", "t9", "t10", "t11"} and len(anchor.sentinels) == 1
    assert set(anchor.tasks) <= set(train) and len(set(anchor.tasks)) == 6
    assert select_anchor(rates, ["t4", "t5", "t6", "t0"], train, size=6, seed="s") == anchor
    with pytest.raises(ValueError, match="outside train"):
        select_anchor(rates, ["test-7"], train, size=3, seed="s")


def test_each_shipped_benchmark_has_at_least_seven_why_classes():
    from flashrsi_dagster.algorithms.evolver.taxonomy import BUILTIN, MIN_WHY_CLASSES, builtin

    assert set(BUILTIN) == {"text_classification", "terminal_bench", "swe_bench"}
    for name, table in BUILTIN.items():
        assert table.source == "builtin" and len(table.names()) >= MIN_WHY_CLASSES, name
    assert builtin("appworld") is None  # never another benchmark's table


def test_a_new_benchmark_gets_a_taxonomy_by_two_stage_induction_or_an_explicit_error():
    from flashrsi_dagster.algorithms.evolver.taxonomy import TaxonomyError, induce

    names = [f"class_{c}" for c in "abcdefgh"]
    table = json.dumps({"whys": [{"name": n, "description": "d"} for n in names]})
    asked = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        return table

    induced = induce("appworld", ["task: x; answer: y; expected: z"], ask)
    assert induced.source == "induced" and induced.names() == tuple(names)
    assert "failure 1" in asked[0] and "class_a" in asked[1]  # propose, then consolidate
    too_few = json.dumps({"whys": [{"name": "only_one", "description": "d"}]})
    with pytest.raises(TaxonomyError, match="has 1 WHY classes, the SOP needs at least 7"):
        induce("appworld", ["s"], lambda _: too_few)
    with pytest.raises(TaxonomyError, match="failed at the propose stage"):
        induce("appworld", ["s"], lambda _: "I cannot do that")
    with pytest.raises(TaxonomyError, match="no failures"):
        induce("appworld", [], ask)


def test_the_failure_map_folds_each_parents_rediagnosis_once_and_keeps_flips():
    from flashrsi_dagster.algorithms.evolver.failure_map import (
        Diagnosis,
        FailureMap,
        fold,
        harm_replay,
        outcomes,
    )

    start = FailureMap(whys=("missing_cue", "wrong_default"))
    cold = fold(
        start,
        "vanilla",
        0,
        [Diagnosis(task="t1", why="missing_cue"), Diagnosis(task="t2", why="wrong_default")],
        {},
    )
    assert cold.failing_by_why() == {"missing_cue": 1, "wrong_default": 1}
    moved = outcomes({"t1": 0.0, "t2": 0.0, "t3": 1.0}, {"t1": 1.0, "t2": 1 / 3, "t3": 2 / 3})
    assert moved == {"t1": "fixed", "t2": "still_failing", "t3": "flipped"}
    flip = harm_replay("t3", 1, "child-1", "x" * 5000)
    assert len(flip.excerpt) < 2100 and "[cut]" in flip.excerpt
    later = fold(cold, "child-1", 1, [Diagnosis(task="t3", why="missing_cue")], moved, [flip])
    assert later.fixed == {"t1": 1} and sorted(later.failing) == ["t2", "t3"]
    assert later.failing["t3"].round == 1 and later.flips == [flip]
    assert later.tasks_of("missing_cue") == ["t3"]
    with pytest.raises(ValueError, match="already diagnosed"):
        fold(later, "child-1", 2, [], {})
    with pytest.raises(ValueError, match="outside the taxonomy"):
        fold(later, "child-2", 2, [Diagnosis(task="t9", why="made_up")], {})


def test_the_qd_archive_keeps_one_elite_per_where_why_cell_and_pairs_cells():
    from flashrsi_dagster.algorithms.evolver.archive import elites, recombinations
    from flashrsi_dagster.algorithms.evolver.nodes import Node

    def node(k, why, where, mean, library=True, sid=None):
        return Node(
            id=f"r{k}.w1c1",
            round=k,
            slot="w1c1",
            why=why,
            where=where,
            parent_id="p",
            snapshot_id=sid or f"s{k}{why}{mean}",
            state="promoted_to_baseline",
            reason="r",
            confirm_mean=mean,
            vanilla_mean=0.5,
            library=library,
        )

    nodes = [
        node(1, "missing_cue", "prompt", 0.7),
        node(2, "missing_cue", "prompt", 0.7),  # a tie: the earlier round stays
        node(3, "missing_cue", "prompt", 0.9, library=False),  # failed a gate
        node(2, "wrong_default", "runtime", 0.6),
        node(3, "wrong_default", "prompt", 0.8),
    ]
    cells = elites(nodes)
    assert {c: n.round for c, n in cells.items()} == {
        "prompt:missing_cue": 1,
        "runtime:wrong_default": 2,
        "prompt:wrong_default": 3,
    }
    pairs = recombinations(cells, limit=2)
    assert len(pairs) == 2 and all(a.why != b.why or a.where != b.where for a, b in pairs)
    assert {pairs[0][0].confirm_mean, pairs[0][1].confirm_mean} == {0.7, 0.8}  # strongest first


def test_the_beacon_guard_refuses_python_edits_without_an_activation_beacon():
    from flashrsi_dagster.algorithms.evolver.beacon import beacon_names, beacon_refusal

    files: dict[str, bytes] = {}

    def diff(path: str, *added: str) -> str:
        """A new file `path` of the lines `added` (kept as the candidate's version)."""
        files[path] = "".join(f"{line}\n" for line in added).encode()
        body = "\n".join(f"+{line}" for line in added)
        header = f"diff --git a/{path} b/{path}\n--- /dev/null\n+++ b/{path}\n"
        return f"{header}@@ -0,0 +1,{len(added)} @@\n{body}\n"

    def refusal(diff: str) -> str | None:
        return beacon_refusal(diff, files.get)

    assert refusal(diff("prompts/system.md", "- sports when the text mentions: goal")) is None
    guarded = diff("runtime/agent.py", "activation_beacon('retry_on_empty')", "retry()")
    assert refusal(guarded) is None
    assert beacon_names(guarded, files.get) == {"retry_on_empty"}
    too_long = diff("runtime/agent.py", f"activation_beacon('{'x' * 65}')", "retry()")
    assert refusal(too_long) is not None  # the runtime would refuse the name
    bare = diff("runtime/agent.py", "retry()")
    assert "runtime/agent.py" in (refusal(bare) or "")
    commented = diff("runtime/agent.py", "retry()  # activation_beacon('x')")
    assert refusal(commented) is not None  # a comment is not a beacon
    quoted = diff("runtime/agent.py", "retry()", "NOTE = 'activation_beacon(\"x\")'")
    assert refusal(quoted) is not None  # nor is a string
    hashed = diff("runtime/agent.py", "retry('#'); activation_beacon('x')")
    assert refusal(hashed) is None  # a `#` in a string starts no comment
    assert refusal(diff("runtime/agent.py", "", "# just a note")) is None  # no code added
    hidden = diff("runtime/agent.py", "# a note\rretry()")  # Python breaks the line at `\r`
    assert "runtime/agent.py" in (refusal(hidden) or "")
    utf7 = diff("runtime/agent.py", "# coding: utf-7", "# +AAo-retry()")
    assert "source encoding utf-7" in (refusal(utf7) or "")
    guarded = diff("runtime/agent.py", "activation_beacon('retry_on_empty')", "retry()")
    two = guarded + diff("tools/shell.py", "return out.strip()")
    assert "tools/shell.py" in (refusal(two) or "") and "agent.py" not in refusal(two)


def test_no_test_leak_at_start_and_retention_at_the_end():
    from flashrsi_dagster.algorithms.evolver.sealed import (
        Delivered,
        LeakedTestTask,
        assert_no_test_leak,
        retention,
    )

    assert_no_test_leak(["x1", "x2"], train=["t1", "t2"], anchor=["t1"])
    with pytest.raises(LeakedTestTask, match="1 test task\\(s\\) in anchor: x2"):
        assert_no_test_leak(["x1", "x2"], train=["t1"], anchor=["t1", "x2"])
    rows = retention(
        [
            Delivered("vanilla", "v", train=0.50, test=0.40),
            Delivered("round 1", "a", train=0.70, test=0.50),
            Delivered("round 2", "b", train=0.50, test=0.45),
        ]
    )
    assert rows[0].retained is None and rows[0].train_lift == 0
    assert rows[1].train_lift == pytest.approx(0.2) and rows[1].retained == pytest.approx(0.5)
    assert rows[2].retained is None  # no train lift: nothing to retain


def test_the_librarys_best_becomes_the_parent_and_the_round_outcome_feeds_patience():
    from flashrsi_dagster.algorithms.evolver.next_parent import decide, outcome
    from flashrsi_dagster.algorithms.evolver.nodes import Node

    def node(k, slot, state, mean=None, library=False):
        return Node(
            id=f"r{k:03d}.{slot}",
            round=k,
            slot=slot,
            why="w",
            parent_id="p",
            snapshot_id=f"sha-{k}-{slot}",
            state=state,
            reason="r",
            confirm_mean=mean,
            vanilla_mean=0.5,
            library=library,
        )

    culled = node(1, "w1c1", "pruned_at_screen")
    lost = node(1, "w1c2", "pruned_at_confirm", 0.45)
    kept = decide(1, [culled, lost], [], None, "vanilla")
    assert kept.outcome == "no_gain" and kept.parent_after == "vanilla" and kept.promoted is None
    assert "re-diagnosed" in kept.reason
    won = node(2, "w1c1", "promoted_to_baseline", 0.7, library=True)
    second = node(2, "w1c2", "pruned_at_confirm", 0.6, library=True)
    moved = decide(2, [won, second], [won, second], None, "vanilla")
    assert (moved.outcome, moved.parent_after, moved.promoted) == (
        "beat_vanilla",
        "sha-2-w1c1",
        "r002.w1c1",
    )
    later = node(
        3, "w1c1", "pruned_at_confirm", 0.65, library=True
    )  # beats vanilla, not the parent
    stay = decide(3, [later], [won, second, later], won, "vanilla")
    assert stay.outcome == "beat_vanilla" and stay.parent_after == "sha-2-w1c1"
    assert stay.promoted is None
    errored = [node(4, "w1c1", "errored"), node(4, "w1c2", "errored")]
    assert outcome(errored) == "errored"
    assert outcome([*errored, node(4, "w2c1", "blocked_l1")]) == "no_gain"


def test_the_credited_label_is_the_paired_two_sigma_beside_the_small_n_verdict():
    from flashrsi_dagster.algorithms.evolver.confirm_gates import Confirmed, credit

    tasks = ["a", "b", "c", "d"]
    vanilla = Confirmed({"a": [0, 0, 0], "b": [1, 0, 0], "c": [1, 1, 0], "d": [1, 1, 1]})
    # d = (2/3, 1/3, 1/3, 0): mean 1/3, stdev sqrt(2/27) (ddof 1), se = stdev / 2, z = sqrt(6)
    candidate = Confirmed({"a": [1, 1, 0], "b": [1, 1, 0], "c": [1, 1, 1], "d": [1, 1, 1]})
    label = credit(candidate, vanilla, tasks)
    assert label.lift == pytest.approx(1 / 3, abs=1e-12)
    assert label.z == pytest.approx(math.sqrt(6), abs=1e-9)
    assert label.credited_2sigma and label.small_n == "indecisive"  # 3 wins, 1 tie: p = 0.25
    same = credit(vanilla, vanilla, tasks)
    assert same.z is None and not same.credited_2sigma and same.small_n == "indecisive"


def test_history_counts_lost_and_inert_attempts_by_why_and_findings_tell_the_round():
    from flashrsi_dagster.algorithms.evolver.history import findings_section, why_history
    from flashrsi_dagster.algorithms.evolver.nodes import Node
    from flashrsi_dagster.algorithms.evolver.records import RoundDecision, RoundPlan

    def node(slot, why, state, **extra):
        return Node(
            id=f"r001.{slot}",
            round=1,
            slot=slot,
            why=why,
            parent_id="p",
            state=state,
            reason=f"{state} | why",
            **extra,
        )

    nodes = [
        node("w1c1", "missing_cue", "pruned_at_screen"),
        node("w1c2", "missing_cue", "pruned_inert"),
        node("w2c1", "wrong_default", "pruned_at_confirm", confirm_mean=0.4, credited_2sigma=False),
        node("w2c2", "wrong_default", "errored"),
    ]
    history = why_history(nodes)
    assert (history["missing_cue"].failed, history["missing_cue"].inert) == (1, 1)
    assert (history["wrong_default"].failed, history["wrong_default"].inert) == (1, 0)
    plan = RoundPlan(
        round=1,
        parent_id="vanilla-sha",
        whys=["missing_cue", "wrong_default"],
        source="formula",
        shadow=[("missing_cue", 3.0)],
        note="no model pick",
        slots=[n.slot for n in nodes],
        anchor={},
    )
    decision = RoundDecision(
        round=1,
        outcome="no_gain",
        parent_before="v",
        parent_after="v",
        reason="no candidate passed every gate: kept",
    )
    text = findings_section(plan, nodes, decision)
    assert text.startswith("## Round 1") and "missing_cue 3.00" in text
    assert "| r001.w2c1 | wrong_default | - | pruned_at_confirm | 0.4000 | no |" in text
    assert "\\| why" in text and "Decision: no_gain" in text


def test_diagnoses_name_failing_train_tasks_once_with_a_taxonomy_why():
    from flashrsi_dagster.algorithms.evolver.protocol import read_diagnoses, read_why_pick
    from flashrsi_dagster.answers import ProtocolError

    def answer(*items):
        return "```json\n" + json.dumps({"diagnoses": list(items)}) + "\n```"

    read = lambda text: read_diagnoses(text, failing={"t1", "t2"}, whys={"a", "b"}, round=2)  # noqa: E731
    found = read(answer({"task": "t1", "why": "a", "where": "prompt", "evidence": "no rule"}))
    assert found[0].why == "a" and found[0].round == 2 and found[0].where == "prompt"
    for bad, match in [
        (answer({"task": "test-9", "why": "a"}), "not a failing train task"),
        (answer({"task": "t1", "why": "a"}, {"task": "t1", "why": "b"}), "twice"),
        (answer({"task": "t2", "why": "made_up"}), "not in the taxonomy"),
        ("I think it is the prompt.", "without a JSON object"),
    ]:
        with pytest.raises(ProtocolError, match=match):
            read(bad)
    assert read_why_pick('{"whys": ["a"], "reason": "most failures"}').whys == ["a"]
    assert read_why_pick("no idea") is None  # the formula decides, no abort


def test_the_instructions_carry_train_evidence_history_and_harm_replays_only():
    from flashrsi_dagster.algorithms.evolver.choose import WhyHistory
    from flashrsi_dagster.algorithms.evolver.failure_map import Diagnosis, harm_replay
    from flashrsi_dagster.algorithms.evolver.prompts import (
        design_instruction,
        diagnose_instruction,
        pick_instruction,
    )
    from flashrsi_dagster.algorithms.evolver.taxonomy import BUILTIN

    table = BUILTIN["text_classification"]
    text = diagnose_instruction(table, {"t1": "Text: ... answered spam, expected ham"})
    assert text.startswith("Evolver phase: diagnose") and "- missing_cue:" in text
    assert "### task t1" in text
    pick = pick_instruction({"missing_cue": 4}, {"missing_cue": WhyHistory(failed=1)}, limit=2)
    assert pick.startswith("Evolver phase: pick") and "at most\n2." in pick
    assert "missing_cue: 4 failing task(s); earlier candidates lost 1, never fired 0" in pick
    design = design_instruction(
        "missing_cue",
        "the text carries a cue no rule names",
        [Diagnosis(task="t1", why="missing_cue", evidence="no rule for 'invoice'")],
        [harm_replay("t7", 2, "sha", "the run answered ham")],
        WhyHistory(failed=0, inert=2),
        index=2,
        count=3,
        components="prompt: prompts/**",
        prompt_file="prompts/system.md",
    )
    assert (
        "WHY: missing_cue" in design
        and "Prompt file: prompts/system.md" in design
        and "candidate 2 of 3" in design
    )
    assert "no rule for 'invoice'" in design and "--- t7 (round 2)" in design
    assert "2 never fired" in design and 'activation_beacon("<mechanism name>")' in design
