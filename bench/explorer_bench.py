"""How long the explorer takes to draw the candidate tree of a 1,000-candidate experiment in
headless Chromium (issue 26's target: under 2 s on the 2-core machine).

Run from the project root::

    .venv/bin/python bench/explorer_bench.py                   # 1,000 candidates, 5 loads
    .venv/bin/python bench/explorer_bench.py --candidates 200 --slots 4 --repeats 3

It synthesises a Meta-Harness experiment in a temporary home, in the project's own formats, fast:
the experiment is opened as `flashrsi run` opens it (`run_meta.json`, the snapshot store), the
seed is the real demo harness (`SnapshotStore.create_seed`), and the candidates are real
snapshots (commits under `refs/snapshots/<id>` with the store's message document, each editing
`prompts/system.md` from the round's baseline), written in one `git fast-import` and one
`git update-ref --stdin` instead of one commit per candidate through the store; the ledger holds
one `Decision` per candidate (`--slots` per round, the best of a round promoted when it beats
the baseline, the rest rejected or pruned), with dev scores and the behaviour signal's tokens.

The explorer runs as `flashrsi explorer` runs it (its own process, on loopback). Each load opens
`/?experiment=<name>` in one Chromium tab and reads the page's own `tree-painted` mark (ms from
the navigation's start to the frame after the tree's SVG is in the document, the tree fetched
and laid out): the first load is cold (the server builds the tree), the next ones warm (served
from the explorer's cache); one more load follows an appended ledger line (a live experiment:
the tree is rebuilt with its new node, the store's snapshots already read). The JSON report goes
to bench/out/explorer_bench.json, a screenshot of the last load beside it; the exit code is 0
unless something crashed (a report, not a test).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from report import OUT, save

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flashrsi_dagster.agents.roles import harness_components, harness_dir  # noqa: E402
from flashrsi_dagster.config import load_config  # noqa: E402
from flashrsi_dagster.decisions.ledger import LEDGER, Decision, Evidence, Ref  # noqa: E402
from flashrsi_dagster.experiment import open_experiment  # noqa: E402
from tests.deployment.chromium import CHROMIUM, Chromium  # noqa: E402

NAME = "explorer-bench"
EDITED = "prompts/system.md"
TARGET_MS = 2000


def synthesise(home: Path, candidates: int, slots: int, seed: int = 0) -> int:
    """The experiment under `home`; returns how many nodes its tree has (candidates + seed)."""
    overrides = ["--experiment.home", str(home), "--experiment.name", NAME]
    config = load_config(ROOT / "examples" / "meta_harness.yaml", overrides)
    store = open_experiment(config).snapshots
    base = store.create_seed(harness_dir(config.agent), harness_components(config.agent))
    rows = _plan(candidates, slots, base.id, random.Random(seed))
    text = store.read_file_at(base, EDITED).decode()
    components = base.components.to_dict()
    ids = _commit_all(store.root, rows, text, components)
    lines = [_decision(row, ids).model_dump_json() for row in rows]
    (home / NAME / LEDGER).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return candidates + 1


def _plan(candidates: int, slots: int, seed_id: str, rng: random.Random) -> list[dict]:
    """Each candidate's round, slot, parent (the round's baseline), score and fate."""
    rows, base, base_score = [], {"id": seed_id, "round": 0, "score": 0.3}, 0.3
    for start in range(0, candidates, slots):
        k = start // slots + 1
        round_rows = []
        for i in range(start, min(start + slots, candidates)):
            # an edit moves the score by a share of what is left to gain: it never reaches 1,
            # so promotions go on and the tree stays deep, as a long search's does
            score = round(max(0.0, base_score + (1 - base_score) * rng.gauss(-0.3, 0.15)), 6)
            round_rows.append({"i": i, "round": k, "slot": f"c{i - start}", "score": score})
        best = max(round_rows, key=lambda r: r["score"])
        for row in round_rows:
            row.update(parent=base, tokens=700 + rng.randint(0, 300))
            row["fate"] = "adopt" if row is best and row["score"] > base_score else "reject"
            row["pruned"] = row["fate"] == "reject" and row["i"] % 7 == 0
        rows.extend(round_rows)
        if best["fate"] == "adopt":
            base, base_score = {"id": None, "row": best, "round": k}, best["score"]
    return rows


def _commit_all(root: Path, rows: list[dict], text: str, components: dict) -> list[str]:
    """One commit per row in one fast-import; then each its `refs/snapshots/<id>`."""
    stream = bytearray()
    for row in rows:
        parent = row["parent"]
        source = f":{parent['row']['i'] + 1}" if parent["id"] is None else parent["id"]
        created = datetime.now(UTC)
        message = f"meta-harness step {row['round']}"
        document = {
            "components": components,
            "created": created.isoformat(),
            "message": message,
            "metadata": {"produced_by": None, "round": row["round"], "slot": row["slot"]},
        }
        body = f"{message}\n\n{json.dumps(document, sort_keys=True)}\n".encode()
        content = f"{text}\n- rule {row['i']}: prefer the label the evidence names.\n".encode()
        stream += f"commit refs/explorer-bench/tip\nmark :{row['i'] + 1}\n".encode()
        stream += f"committer FlashRSI <flashrsi@localhost> {int(time.time())} +0000\n".encode()
        stream += b"data %d\n%s\nfrom %s\n" % (len(body), body, source.encode())
        stream += b"M 100644 inline %s\ndata %d\n%s\n" % (EDITED.encode(), len(content), content)
    marks = root / "tmp" / "explorer-bench.marks"
    git = ["git", "-C", str(root)]
    subprocess.run(
        [*git, "fast-import", "--quiet", f"--export-marks={marks}"], input=bytes(stream), check=True
    )
    by_mark = dict(line.split() for line in marks.read_text().splitlines())
    marks.unlink()
    ids = [by_mark[f":{row['i'] + 1}"] for row in rows]
    refs = "".join(f"create refs/snapshots/{sha} {sha}\n" for sha in ids)
    refs += "delete refs/explorer-bench/tip\n"
    subprocess.run([*git, "update-ref", "--stdin"], input=refs.encode(), check=True)
    return ids


def _decision(row: dict, ids: list[str]) -> Decision:
    parent = row["parent"]
    parent_id = ids[parent["row"]["i"]] if parent["id"] is None else parent["id"]
    base_score = parent["row"]["score"] if parent["id"] is None else 0.3
    adopted = row["fate"] == "adopt"
    why = "pruned: below the round's screen" if row["pruned"] else "not promoted"
    return Decision(
        id=f"meta_harness/bench/r{row['round']:03d}.{row['slot']}",
        decision=row["fate"],
        algorithm="meta_harness",
        scope="experiment" if adopted else "search",
        candidate=Ref(snapshot_id=ids[row["i"]], round=row["round"], slot=row["slot"]),
        baseline=Ref(snapshot_id=parent_id, round=parent["round"], slot="c0"),
        reason=f"dev score {row['score']:.3f} vs {base_score:.3f}: "
        + ("promoted" if adopted else why),
        evidence=Evidence(
            scores={"dev_score": row["score"], "baseline_dev_score": base_score},
            paired={"verdict": "better" if adopted else "not better"},
            behaviour={"tokens_candidate": row["tokens"], "tokens_parent": 800},
        ),
        eval_set="dev:50:sha256-0000000000000000",
    )


def _serve(home: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "flashrsi_dagster.cli", "explorer", "--home", str(home)]
    process = subprocess.Popen([*command, "--port", str(port)], cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{url}/static/explorer.css", timeout=5).close()
            return process, url
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the explorer did not start") from None
            time.sleep(0.2)


def load(browser: Chromium, url: str, nodes: int) -> float:
    """One load of the tree page: the page's own ms from navigation start to the painted tree."""
    browser.call("Page.navigate", url=f"{url}/?experiment={NAME}")
    mark = "performance.getEntriesByName('tree-painted').map(e => e.startTime)[0]"
    painted = browser.wait_for(f"document.readyState === 'complete' && {mark}", timeout=120)
    drawn = browser.evaluate("document.querySelectorAll('.node').length")
    assert drawn == nodes, f"{drawn} nodes drawn, {nodes} expected"
    return float(painted)


def _append_decision(home: Path) -> None:
    """A live experiment's next ledger line: an edit of a new round that committed nothing,
    rejected (a new node, `r<round>.c0`, without a snapshot)."""
    ledger = home / NAME / LEDGER
    last = Decision.model_validate_json(ledger.read_text().splitlines()[-1])
    k = (last.candidate.round or 0) + 1
    empty = Ref(snapshot_id=None, round=k, slot="c0")
    again = last.model_copy(
        update={"id": f"{last.id}/r{k}", "candidate": empty, "reason": "the edit changed nothing"}
    )
    with ledger.open("a", encoding="utf-8") as out:
        out.write(again.model_dump_json() + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--slots", type=int, default=5, help="candidates per round")
    parser.add_argument("--repeats", type=int, default=5, help="warm loads after the cold one")
    args = parser.parse_args()
    if CHROMIUM is None:
        sys.exit("needs chromium (make browser)")
    with tempfile.TemporaryDirectory(prefix="explorer-bench-") as folder:
        home = Path(folder) / "home"
        started = time.perf_counter()
        nodes = synthesise(home, args.candidates, args.slots)
        made = time.perf_counter() - started
        print(f"synthesised {args.candidates} candidates ({nodes} nodes) in {made:.1f} s")
        process, url = _serve(home)
        browser = Chromium(Path(folder) / "profile")
        try:
            cold = load(browser, url, nodes)
            warm = [load(browser, url, nodes) for _ in range(args.repeats)]
            _append_decision(home)
            live = load(browser, url, nodes + 1)
            browser.save(OUT / "explorer_bench.png")  # and its DOM, .html beside it
        finally:
            browser.close()
            process.terminate()
            process.wait(timeout=30)
    median = statistics.median(warm)
    report = {
        "candidates": args.candidates,
        "nodes": nodes,
        "slots": args.slots,
        "synthesise_s": round(made, 2),
        "cold_ms": round(cold, 1),
        "warm_ms": [round(w, 1) for w in warm],
        "warm_median_ms": round(median, 1),
        "after_ledger_append_ms": round(live, 1),
        "target_ms": TARGET_MS,
        "pass": max(cold, median, live) < TARGET_MS,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
    }
    print(
        f"tree of {nodes} nodes painted: cold {cold:.0f} ms, warm median {median:.0f} ms "
        f"({', '.join(f'{w:.0f}' for w in warm)}), after a ledger append {live:.0f} ms; "
        f"target < {TARGET_MS} ms: {'PASS' if report['pass'] else 'MISS'}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    save("explorer_bench", report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
