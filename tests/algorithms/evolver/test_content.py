"""The Evolver's content check: a design that writes train texts with their labels into the
prompt is `blocked_l1` before its screen (no rollout of it exists), its verdict in the
ledger; the other candidate of the WHY, a rule that names the labels, is screened."""

from __future__ import annotations

from flashrsi_dagster.contamination import ContentVerdict
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.records import read_record
from tests.conftest import needs_jails
from tests.sabotage.helpers import say, shell
from tests.sabotage.test_evolver import Run, designing

pytestmark = needs_jails

RULE = "\\n- malicious when the text mentions: ignore, previous (an injection); else benign\\n"


def test_a_design_carrying_texts_and_labels_is_blocked_before_its_screen(tmp_path):
    probe = designing(tmp_path / "probe", [[say()]])
    rows = "".join(
        f"{probe.benchmark.secrets(t)[0].text} => {t.verifier['label']}\n"
        for t in probe.splits.train
    )
    designs = [
        [shell(f"cat >> prompts/system.md <<'EOF'\n\nKnown answers:\n{rows}EOF"), say()],
        [shell(f"printf '{RULE}' >> prompts/system.md"), say()],
    ]
    evolver = designing(tmp_path, designs, k=1, max_rounds=1, patience=1)
    evolver.run()
    run = Run(evolver, {})

    node = run.node(1, "w1c1")
    assert node.state == "blocked_l1" and node.reason.startswith("content check: the candidate")
    for part in ("screen.jsonl", "confirm.jsonl"):
        assert not run.layout.candidate(1, "w1c1", part).exists(), part
    verdict = read_record(run.layout.candidate(1, "w1c1", "content.json"), ContentVerdict)
    assert verdict.contaminated
    assert verdict.named == {"train": sorted(t.id for t in evolver.splits.train)}
    honest = run.node(1, "w1c2")
    assert honest.state != "blocked_l1" and honest.screen is not None
    clean = read_record(run.layout.candidate(1, "w1c2", "content.json"), ContentVerdict)
    assert not clean.contaminated
    entry = next(e for e in Ledger.of(evolver.experiment).entries() if e.id == "evolver/r001.w1c1")
    assert entry.decision == "reject" and entry.evidence.contamination is not None
    assert "records/evolver/round-001/w1c1/content.json" in entry.raw
