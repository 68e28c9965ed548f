// The explorer page: the candidate tree of one experiment (d3-hierarchy's layout, drawn as
// SVG), its score over rounds (uPlot), and a node's panel from the JSON API.

const COLOURS = {
  promoted: "#16a34a", adopted: "#4ade80", rejected: "#ef4444", pruned: "#f59e0b",
  archived: "#60a5fa", seed: "#9ca3af", unjudged: "#e5e7eb",
};
const ROOT = "__experiment__";
const LANGUAGES = { py: "python", md: "markdown", yaml: "yaml", yml: "yaml", json: "json",
  sh: "bash", toml: "ini", js: "javascript", ts: "typescript", txt: "plaintext" };
const $ = (id) => document.getElementById(id);
const state = { name: null, tree: null, selected: null };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "onclick") node.onclick = v; else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child);
  return node;
}

async function get(path) {
  const response = await fetch(path);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

const api = (suffix) => `/api/experiments/${encodeURIComponent(state.name)}${suffix}`;
const short = (id) => (id && id.length === 40 ? id.slice(0, 8) : id || "-");
const fmt = (x) => (typeof x === "number" ? (Number.isInteger(x) ? String(x) : x.toFixed(3)) : x ?? "-");

async function start() {
  const experiments = await get("/api/experiments");
  const select = $("experiment");
  for (const e of experiments) select.append(el("option", { value: e.name }, `${e.name} (${e.algorithm})`));
  $("legend").append(...Object.entries(COLOURS).flatMap(([k, c]) => [
    el("span", { class: "swatch", style: `background:${c}` }), k]));
  const wanted = new URLSearchParams(location.search).get("experiment");
  if (wanted) select.value = wanted;
  select.onchange = () => open(select.value, null);
  if (select.value) await open(select.value, new URLSearchParams(location.search).get("node"));
  else $("tree").textContent = "No experiments under this home yet: run one (flashrsi run).";
}

async function open(name, node) {
  state.name = name;
  state.tree = await get(api("/tree"));
  const t = state.tree;
  const sealed = t.sealed_test ? `sealed test ${fmt(t.sealed_test.score)} on ${t.sealed_test.tasks} tasks` : "sealed test not run yet";
  $("summary").textContent = `${t.algorithm} · ${t.nodes.length} nodes · baseline ${short(t.baseline)} · ${sealed}`;
  drawTree(t);
  drawPlot(t);
  if (node) await select(node);
}

function drawTree(t) {
  const ids = new Set(t.nodes.map((n) => n.id));
  const rows = [{ id: ROOT, parent: null }, ...t.nodes.map((n) => ({
    ...n, parent: n.parent && ids.has(n.parent) ? n.parent : ROOT }))];
  const root = d3.stratify().id((d) => d.id).parentId((d) => d.parent)(rows);
  // A generation's column is as wide as its longest label (ModularRSI's slots are module names).
  const dx = 26, dy = Math.max(120, 40 + 6.5 * Math.max(...t.nodes.map((n) => label(n).length)));
  d3.tree().nodeSize([dx, dy])(root);
  let x0 = Infinity, x1 = -Infinity, y1 = 0;
  root.each((d) => { x0 = Math.min(x0, d.x); x1 = Math.max(x1, d.x); y1 = Math.max(y1, d.y); });
  // The first column (the experiment's virtual root) is left out of view; the last keeps room
  // for its labels.
  const width = y1 + 20, height = x1 - x0 + 2 * dx;
  const ns = "http://www.w3.org/2000/svg";
  const make = (tag, attrs) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    return node;
  };
  const svg = make("svg", { width, height, viewBox: `${dy - 20} ${x0 - dx} ${width} ${height}` });
  const at = new Map(root.descendants().map((d) => [d.id, d]));
  for (const link of root.links()) {
    if (link.source.id === ROOT) continue;
    svg.append(make("path", { class: "link",
      d: `M${link.source.y},${link.source.x}C${(link.source.y + link.target.y) / 2},${link.source.x} ${(link.source.y + link.target.y) / 2},${link.target.x} ${link.target.y},${link.target.x}` }));
  }
  for (const d of root.descendants()) {
    const by = d.data.produced_by && at.get(d.data.produced_by);
    if (by && by.id !== d.data.parent) {
      svg.append(make("path", { class: "produced", d: `M${by.y},${by.x}Q${(by.y + d.y) / 2},${(by.x + d.x) / 2 - 20} ${d.y},${d.x}` }));
    }
  }
  for (const d of root.descendants()) {
    if (d.id === ROOT) continue;
    const g = make("g", { class: "node", "data-id": d.id, transform: `translate(${d.y},${d.x})` });
    const n = d.data;
    const r = n.score == null ? 5 : 5 + 6 * Math.max(0, Math.min(1, n.score));
    g.append(make("circle", { r, fill: COLOURS[n.outcome] || "#ccc" }));
    const text = make("text", { x: r + 3, dy: "0.32em" });
    text.textContent = label(n);
    g.append(text);
    const title = make("title", {});
    title.textContent = `${n.id}\n${n.outcome}: ${n.reason}`;
    g.append(title);
    g.addEventListener("click", () => select(n.id));
    svg.append(g);
  }
  $("tree").replaceChildren(svg);
}

function label(n) {
  const round = n.round == null ? "" : `r${n.round}${n.slot ? "." + n.slot : ""} `;
  return `${round}${fmt(n.score)}${n.sealed_test != null ? " · test " + fmt(n.sealed_test) : ""}`;
}

function drawPlot(t) {
  const scored = t.nodes.filter((n) => n.round != null && n.score != null).sort((a, b) => a.round - b.round);
  if (!scored.length) { $("plot").textContent = "No scores yet."; return; }
  const rounds = [...new Set(scored.map((n) => n.round))];
  const best = [], score = [];
  let sofar = -Infinity;
  for (const k of rounds) {
    const top = Math.max(...scored.filter((n) => n.round === k).map((n) => n.score));
    sofar = Math.max(sofar, top);
    score.push(top); best.push(sofar);
  }
  const opts = {
    width: Math.max(300, $("left").clientWidth - 30), height: 220,
    scales: { x: { time: false } },
    axes: [{ incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500] }, {}],
    series: [{ label: "round" },
      { label: "best score of the round", stroke: "#2563eb", points: { size: 7 } },
      { label: "best so far", stroke: "#16a34a", width: 2 }],
  };
  $("plot").replaceChildren();
  new uPlot(opts, [rounds, score, best], $("plot"));
}

async function select(id) {
  state.selected = id;
  for (const g of document.querySelectorAll(".node")) g.classList.toggle("selected", g.dataset.id === id);
  history.replaceState(null, "", `?experiment=${encodeURIComponent(state.name)}&node=${encodeURIComponent(id)}`);
  const detail = await get(api(`/nodes/${encodeURIComponent(id)}`));
  const panel = $("panel");
  const n = detail.node;
  const tabs = el("div", { class: "tabs" });
  const body = el("div", { id: "tab" });
  const views = { Evidence: () => evidence(detail), Code: () => code(n), Diff: () => diff(n),
    Worker: () => worker(detail), Targets: () => targets(detail), Records: () => rawRecords(detail) };
  for (const [name, view] of Object.entries(views)) {
    tabs.append(el("button", { onclick: async (e) => {
      for (const b of tabs.children) b.classList.toggle("on", b === e.target);
      body.replaceChildren(await view());
    } }, name));
  }
  panel.replaceChildren(
    el("h2", {}, `${n.round == null ? "" : "round " + n.round + " " + (n.slot || "")} · ${n.outcome}`),
    el("p", {}, `node ${n.id}`), el("p", {}, n.reason), tabs, body);
  tabs.children[0].click();
}

function table(rows) {
  return el("table", {}, ...rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, String(fmt(v))))));
}

function evidence(detail) {
  const n = detail.node;
  const out = el("div", {});
  out.append(table([["outcome", n.outcome], ["parent", n.parent], ["produced by", n.produced_by],
    ["score", n.score], ["verdict", n.verdict], ["sealed test", n.sealed_test]]));
  out.append(el("h3", {}, "Scores"), table(Object.entries(n.scores)));
  out.append(el("h3", {}, "Tokens per role"), table(Object.entries(detail.tokens).map(([role, t]) =>
    [role, `${t.input_tokens || 0} in / ${t.output_tokens || 0} out, ${t.runs || 0} runs, cost ${t.cost ?? "-"}`])));
  for (const d of detail.decisions) {
    out.append(el("h3", {}, `Decision: ${d.decision} (${d.scope})`), el("p", {}, d.reason));
    if (d.evidence.paired) out.append(el("h4", {}, "Paired statistics"), table(Object.entries(d.evidence.paired)));
    const gates = d.evidence.gates || [];
    out.append(el("h4", {}, `Gates (${gates.length})`),
      gates.length ? table(gates.map((g) => [g.name, `${g.passed ? "passed" : "FAILED"} ${g.reason || ""}`])) : el("p", {}, "none"));
    if (d.evidence.comparison) out.append(el("h4", {}, `Comparison: ${d.evidence.comparison.verdict}`),
      el("p", {}, (d.evidence.comparison.reasons || []).join("; ")));
  }
  if (detail.links.length) {
    out.append(el("h3", {}, "In Dagster"));
    for (const l of detail.links) out.append(el("a", { href: l.url, target: "_blank" }, l.asset), " ");
  }
  return out;
}

async function code(n) {
  if (!n.snapshot_id) return el("p", {}, "This edit committed no snapshot.");
  const files = await get(api(`/nodes/${n.id}/code`));
  const list = el("ul", {});
  const view = el("div", { style: "flex:1" }, el("p", { class: "hint" }, `${files.length} files: pick one`));
  for (const f of files) {
    list.append(el("li", { onclick: async (e) => {
      for (const li of list.children) li.classList.toggle("on", li === e.target);
      const file = await get(api(`/nodes/${n.id}/code/${f.path.split("/").map(encodeURIComponent).join("/")}`));
      view.replaceChildren(el("h4", {}, file.path), file.text == null
        ? el("pre", {}, `(${file.note})`) : highlighted(file.text, file.path));
    } }, f.path));
  }
  return el("div", { class: "files" }, list, view);
}

function language(path) {
  const name = LANGUAGES[path.split(".").pop()];
  return name && hljs.getLanguage(name) ? name : "plaintext";
}

// Syntax-coloured HTML from highlight.js, which escapes the text it is given.
function colour(text, path) {
  return hljs.highlight(text, { language: language(path), ignoreIllegals: true }).value;
}

function highlighted(text, path) {
  const code = el("code", { class: "hljs" });
  code.innerHTML = colour(text, path);
  return el("pre", { class: "code" }, code);
}

async function diff(n) {
  if (!n.snapshot_id) return el("p", {}, "This edit committed no snapshot.");
  const d = await get(api(`/nodes/${n.id}/diff`));
  if (!d.parent) return el("p", {}, "A seed: it has no parent to differ from.");
  const pre = el("pre", { class: "diff" });
  let path = "";
  for (const line of d.diff.split("\n")) {
    if (line.startsWith("diff --git")) path = line.split(" b/").pop();
    const cls = line.startsWith("diff --git") ? "file" : line.startsWith("@@") ? "hunk"
      : line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del"
      : line.startsWith(" ") ? "same" : "meta";
    const span = el("span", { class: cls });
    if (["add", "del", "same"].includes(cls)) {
      span.innerHTML = line[0] + colour(line.slice(1), path);
    } else span.textContent = line;
    pre.append(span);
  }
  const s = d.stats;
  return el("div", {}, el("p", {}, `against ${short(d.parent)}: ${s.files} file(s), +${s.insertions} −${s.deletions}`), pre);
}

function entries(trajectory) {
  const out = el("div", {});
  for (const e of trajectory.entries) {
    const box = el("div", { class: "entry" }, el("span", { class: "role" }, e.role), el("pre", {}, e.text || ""));
    for (const c of e.calls) {
      box.append(el("div", { class: c.failed ? "failed" : "" }, `→ ${c.name} ${JSON.stringify(c.arguments)}`),
        el("pre", {}, c.result ?? "(no result recorded)"));
    }
    out.append(box);
  }
  return out;
}

function header(t) {
  const u = t.usage;
  return `${t.task_id} · ${t.status} · score ${fmt(t.score)} · ${u.input_tokens} in / ${u.output_tokens} out · ${u.tool_calls} tool calls`;
}

function worker(detail) {
  if (!detail.worker.length) return el("p", {}, "No Worker trajectory on record for this node.");
  return el("div", {}, ...detail.worker.map((t) => el("div", {}, el("h3", {}, header(t)), entries(t))));
}

const STATUS = { passed: (t) => t.status === "success", failed: (t) => t.status === "failure",
  error: (t) => !["success", "failure"].includes(t.status) };

function targets(detail) {
  const list = el("div", {});
  const boxes = {};
  const draw = () => {
    list.replaceChildren(...detail.target.filter((t) => Object.entries(STATUS).some(([k, f]) => boxes[k].checked && f(t)))
      .map((t) => el("details", {}, el("summary", {}, `[${t.split}] ${header(t)}`), entries(t))));
  };
  const filters = el("div", { class: "filters" });
  for (const k of Object.keys(STATUS)) {
    const count = detail.target.filter(STATUS[k]).length;
    boxes[k] = el("input", { type: "checkbox", checked: "" });
    boxes[k].onchange = draw;
    filters.append(el("label", {}, boxes[k], ` ${k} (${count})`));
  }
  draw();
  return el("div", {}, filters, list);
}

function rawRecords(detail) {
  return el("div", {}, ...detail.records.map((r) =>
    el("details", {}, el("summary", {}, r.record), el("pre", {}, JSON.stringify(r.value, null, 2)))));
}

start().catch((error) => { document.body.append(el("p", { class: "failed" }, `error: ${error.message}`)); });
