"""The explorer's page in Debian's headless Chromium, served by a real uvicorn on the demo home:
the tree renders for each demo, a click on a node reaches its evidence, code, diff, Worker
trajectory and target trajectories (filtered), and the score plot is drawn.

Screenshots (and their DOM) go to a folder the run prints, copied to
`$FLASHRSI_UI_SCREENSHOTS` when set; what each should show is asserted on the page itself."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
from pathlib import Path

import pytest
import uvicorn

from flashrsi_dagster.explorer.server import create_app
from tests.conftest import wait_until
from tests.deployment.chromium import CHROMIUM, Chromium
from tests.explorer.conftest import DEMOS

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="needs Debian's chromium (make test installs it where apt is available)",
)


@pytest.fixture(scope="module")
def explorer(demo_home):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(demo_home, "http://127.0.0.1:3000")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), "the explorer to start")
    assert server.started, "the explorer's server thread ended before it started"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=30)


@pytest.fixture(scope="module")
def page(explorer, tmp_path_factory, request):
    folder = tmp_path_factory.mktemp("explorer-screenshots")
    keep = os.environ.get("FLASHRSI_UI_SCREENSHOTS")
    browser = Chromium(tmp_path_factory.mktemp("chromium-profile"))
    browser.url, browser.folder, browser.keep = explorer, folder, Path(keep) if keep else None
    try:
        yield browser
    finally:
        browser.close()
        capture = request.config.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled():
            print(f"\nexplorer screenshots: {folder}" + (f" (and {keep})" if keep else ""))


def _shot(browser: Chromium, name: str) -> None:
    png = browser.folder / f"explorer-{name}.png"
    browser.save(png)
    assert png.stat().st_size > 10_000
    if browser.keep is not None:
        browser.keep.mkdir(parents=True, exist_ok=True)
        for kept in (png, png.with_suffix(".html")):
            shutil.copyfile(kept, browser.keep / kept.name)


def _tab(browser: Chromium, label: str, *shows: str) -> str:
    browser.click(label)
    return browser.wait(*shows)


def _tree(explorer: str, name: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(f"{explorer}/api/experiments/{name}/tree", timeout=30) as r:
        return json.loads(r.read())


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_the_tree_and_the_score_plot_render_for_each_demo(page, explorer, name):
    tree = _tree(explorer, name)
    page.open(f"{explorer}/?experiment={name}", f"{len(tree['nodes'])} nodes")
    drawn = page.wait_for(f"document.querySelectorAll('.node').length == {len(tree['nodes'])}")
    assert drawn
    colours = page.evaluate(
        "[...document.querySelectorAll('.node circle')].map(c => c.getAttribute('fill'))"
    )
    assert "#16a34a" in colours  # the promoted node, green
    outside = page.evaluate(
        "(() => { const box = document.querySelector('#tree svg').getBoundingClientRect();"
        " return [...document.querySelectorAll('.node circle')].map(c => c.getBoundingClientRect())"
        ".filter(r => r.left < box.left || r.right > box.right"
        " || r.top < box.top || r.bottom > box.bottom).length; })()"
    )
    assert outside == 0  # every node drawn inside the picture
    assert page.wait_for("document.querySelector('#plot canvas') !== null")
    _shot(page, f"tree-{name}")


def test_a_click_on_a_node_reaches_its_evidence_code_diff_and_trajectories(page, explorer):
    name = "meta-harness-demo"
    node = next(n for n in _tree(explorer, name)["nodes"] if n["round"] == 1)
    page.open(f"{explorer}/?experiment={name}", "3 nodes")
    page.wait_for("document.querySelectorAll('.node').length == 3")
    page.evaluate(f"document.querySelector('.node[data-id=\"{node['id']}\"]')"
                  ".dispatchEvent(new MouseEvent('click'))")  # fmt: skip
    text = page.wait("Paired statistics", "Tokens and cost per role", f"node {node['id']}")
    assert node["reason"] in text
    spent = page.evaluate("[...document.querySelectorAll('#node-spend th')].map(t => t.innerText)")
    assert spent == ["target", "worker"]  # the gateway's calls for r001.c0, per role
    runs = page.evaluate("document.querySelector('.dagster a.runs').href")
    assert runs.startswith("http://127.0.0.1:3000/runs?") and "flashrsi%2Fround%3D1" in runs
    assets = page.evaluate("[...document.querySelectorAll('.dagster a.asset')].map(a => a.href)")
    assert len(assets) == 5 and all("partition=r001.c0%7Cmeta-harness-demo" in a for a in assets)
    _shot(page, "node-evidence")

    _tab(page, "Code", "prompts/system.md", "runtime/agent.py")
    page.evaluate(
        "[...document.querySelectorAll('.files li')]"
        ".find(li => li.innerText === 'runtime/agent.py').click()"
    )
    page.wait("runtime/agent.py", "def ")
    assert page.evaluate("document.querySelectorAll('pre.code .hljs-keyword').length") > 0
    _shot(page, "node-code")

    text = _tab(page, "Diff", "diff --git a/prompts/system.md")
    assert page.evaluate("document.querySelectorAll('pre.diff .add').length") > 0
    assert "against " + node["parent"][:8] in text
    _shot(page, "node-diff")
    page.click("side by side")
    assert page.wait_for("document.querySelectorAll('table.split td .add').length > 0")
    assert page.evaluate("document.querySelector('pre.diff')") is None
    assert page.evaluate("document.querySelector('table.split th').innerText") == (
        "prompts/system.md"
    )
    _shot(page, "node-diff-side-by-side")
    page.click("unified")
    assert page.wait_for("document.querySelector('pre.diff') !== null")

    _tab(page, "Worker", "run_config", "→ shell")
    _shot(page, "node-worker")

    text = _tab(page, "Targets", "passed (", "failed (", "error (")
    shown = page.evaluate("document.querySelectorAll('#tab details').length")
    assert shown == 6
    page.evaluate(
        "(() => { const box = [...document.querySelectorAll('.filters label')]"
        ".find(l => l.innerText.trim().startsWith('passed')).querySelector('input');"
        "box.click(); })()"
    )
    passed = int(text.split("passed (")[1].split(")")[0])
    assert page.wait_for(f"document.querySelectorAll('#tab details').length == {6 - passed}")
    _shot(page, "node-targets-without-passed")
    assert page.evaluate("document.querySelector('#error-class').options[0].text") == (
        "any error class"
    )
    task = page.evaluate("document.querySelector('#tab details summary').innerText")
    task = task.split("] ")[1].split(" · ")[0]
    page.evaluate(
        f"(() => {{ const box = document.querySelector('#task-filter'); box.value = '{task}';"
        " box.dispatchEvent(new Event('input')); })()"
    )
    assert page.wait_for("document.querySelectorAll('#tab details').length == 1")
    assert task in page.text() and "1 of 6 rollouts" in page.text()
    _shot(page, "node-targets-one-task")


def test_the_plots_show_the_pareto_frontier_the_dev_test_gap_and_the_spend(page, explorer):
    name = "meta-harness-demo"
    tree = _tree(explorer, name)
    page.open(f"{explorer}/?experiment={name}", "3 nodes", "Pareto frontier", "worker")
    for plot in ("plot", "pareto", "gap"):
        assert page.wait_for(f"document.querySelector('#{plot} canvas') !== null")
    frontier = tree["plots"]["pareto"]["frontier"]
    shown = page.evaluate("[...document.querySelectorAll('#frontier a')].map(a => a.dataset.node)")
    assert shown == frontier
    gap = page.evaluate("document.querySelector('#gap table.gap').innerText")
    assert f"{tree['sealed_test']['score']:.3f}" in gap  # the promoted round's sealed test
    assert page.evaluate("document.querySelectorAll('#spend > table tr').length") == 2  # roles
    each = page.evaluate(
        "[...document.querySelectorAll('#spend-by-candidate th')].map(t => t.textContent)"
    )
    assert {"r000.c0 target", "r001.c0 worker", "r002.c0 worker"} <= set(each)
    runs = page.evaluate("document.querySelector('#runs a').href")
    assert runs.endswith("tag%3Aflashrsi%2Fexperiment%3Dmeta-harness-demo")
    page.evaluate("document.querySelector('#frontier a').click()")
    page.wait(f"node {frontier[0]}")
    _shot(page, "plots")


def test_a_link_from_dagster_opens_its_node(page, explorer):
    """The URL a candidate snapshot's metadata holds (`explorer.links.node_url`)."""
    from flashrsi_dagster.explorer.links import node_url

    name = "evolver-demo"
    node = next(n for n in _tree(explorer, name)["nodes"] if n["round"] == 1)
    page.open(node_url(name, node["id"], explorer), f"node {node['id']}", "Tokens and cost")
    assert page.evaluate(
        f"document.querySelector('.node[data-id=\"{node['id']}\"]').classList.contains('selected')"
    )
    _shot(page, "deep-link-evolver")


def test_a_node_s_checks_show_passed_warning_or_failed_with_the_reason(page, explorer):
    """A rejected ModularRSI step's `edit_adopted` is a warning with the review's reason,
    an adopted one's passes: the same evaluation as the Dagster asset check's."""
    name = "modular-rsi-demo"
    nodes = _tree(explorer, name)["nodes"]
    rejected = next(n for n in nodes if n["outcome"] == "rejected")
    adopted = next(n for n in nodes if n["outcome"] == "adopted")
    page.open(f"{explorer}/?experiment={name}&node={rejected['id']}", f"node {rejected['id']}")
    assert "1 warning" in page.wait("Checks: ")
    _tab(page, "Checks", "⚠ warning edit_adopted", "content_not_contaminated")
    shown = page.evaluate(
        "(() => { const c = document.querySelector('.check[data-check=\"edit_adopted\"]');"
        " return [c.className, c.querySelector('.reason').innerText]; })()"
    )
    assert shown[0] == "check check-warning"
    assert shown[1] == f"rejected: {rejected['reason']}"
    colour = page.evaluate(
        "getComputedStyle(document.querySelector('.check-warning')).borderLeftColor"
    )
    assert colour == "rgb(202, 138, 4)"  # yellow, not the failure's red
    _shot(page, "node-checks-warning")
    page.open(f"{explorer}/?experiment={name}&node={adopted['id']}", f"node {adopted['id']}")
    _tab(page, "Checks", "✓ passed edit_adopted")
    assert page.evaluate("document.querySelectorAll('.check-warning, .check-failed').length") == 0
