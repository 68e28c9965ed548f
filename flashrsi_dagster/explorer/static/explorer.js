// The explorer page: pick an experiment, draw its candidate tree (tree.js) and its plots
// (plots.js), and a node's panel from the JSON API, tab by tab (checks.js, diff.js,
// trajectories.js).

import { checksLine, checksView } from "./checks.js";
import { diffView } from "./diff.js";
import { drawPlots } from "./plots.js";
import { targetsView, workerView } from "./trajectories.js";
import { COLOURS, drawTree } from "./tree.js";
import { $, el, fmt, get, highlighted, short, table } from "./util.js";

const state = { name: null, tree: null, selected: null };
const api = (suffix) => `/api/experiments/${encodeURIComponent(state.name)}${suffix}`;

async function start() {
  const experiments = await get("/api/experiments");
  const select = $("experiment");
  for (const e of experiments) {
    const origin = e.forked_from ? `, forked from ${e.forked_from}` : "";
    select.append(el("option", { value: e.name }, `${e.name} (${e.algorithm}${origin})`));
  }
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
  const sealed = t.sealed_test ? `sealed test ${fmt(t.sealed_test.score)}${t.sealed_test.tasks == null ? "" : ` on ${t.sealed_test.tasks} tasks`}` : "sealed test not run yet";
  $("summary").textContent = `${t.algorithm} · ${t.nodes.length} nodes · baseline ${short(t.baseline)} · ${sealed}`;
  $("runs").replaceChildren(...(t.runs ? [el("a", { href: t.runs, target: "_blank" }, "runs in Dagster")] : []));
  $("forked").replaceChildren(...(t.forked_from ? forkedFrom(t.forked_from) : []));
  drawTree(t, select);
  drawPlots(t, select);
  spend().catch((error) => $("spend").replaceChildren(el("p", { class: "failed" }, `spend: ${error.message}`)));
  if (node) await select(node);
}

// The lineage across experiments: a fork names its origin and the candidate it started
// from, linked to that node of the origin's tree.
function forkedFrom(f) {
  const href = `?experiment=${encodeURIComponent(f.experiment)}&node=${encodeURIComponent(f.snapshot)}`;
  return ["forked from ", el("a", { href }, `${f.experiment} ${f.candidate}`), ` (${short(f.snapshot)}, evaluation sets: ${f.eval_sets})`];
}

// The experiment's spend per role, in all and per candidate, from the gateway's log: fetched
// after the tree so that a long log never holds the tree back.
const spent = (s) => `${s.model_calls} calls, ${s.input_tokens} in / ${s.output_tokens} out, cost ${s.cost == null ? "unpriced" : "$" + s.cost.toFixed(4)}`;

async function spend() {
  const { roles, candidates } = await get(api("/spend"));
  const rows = Object.entries(roles).map(([role, s]) => [role, spent(s)]);
  if (!rows.length) return $("spend").replaceChildren(el("p", { class: "hint" }, "No model calls on record."));
  const each = Object.entries(candidates).flatMap(([c, byRole]) =>
    Object.entries(byRole).map(([role, s]) => [`${c} ${role}`, spent(s)]));
  $("spend").replaceChildren(table(rows),
    el("details", { id: "spend-by-candidate" }, el("summary", {}, `per candidate (${Object.keys(candidates).length})`), table(each)));
}

// What the gateway's log counts for the node's candidate: every call of the runs the host
// granted for it (the Worker's, its rollouts', any rerun), per role.
function gatewaySpend(byRole) {
  const rows = Object.entries(byRole).map(([role, s]) => [role, spent(s)]);
  return rows.length ? table(rows) : el("p", { class: "hint" }, "No gateway calls name this candidate.");
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
  const views = { Evidence: () => evidence(detail), Checks: () => checksView(detail.checks), Code: () => code(n), Diff: () => diffView(api, n),
    Worker: () => workerView(detail), Targets: () => targetsView(detail), Records: () => rawRecords(detail) };
  for (const [name, view] of Object.entries(views)) {
    tabs.append(el("button", { onclick: async (e) => {
      for (const b of tabs.children) b.classList.toggle("on", b === e.target);
      body.replaceChildren(await view());
    } }, name));
  }
  panel.replaceChildren(
    el("h2", {}, `${n.round == null ? "" : "round " + n.round + " " + (n.slot || "")} · ${n.outcome}`),
    el("p", {}, `node ${n.id}`), el("p", {}, n.reason), checksLine(detail.checks), dagsterLinks(detail.links), tabs, body);
  tabs.children[0].click();
}

function dagsterLinks(links) {
  if (!links.length) return el("span", {});
  return el("p", { class: "dagster" }, "In Dagster: ",
    ...links.flatMap((l) => [el("a", { href: l.url, target: "_blank", class: l.kind }, l.asset), " "]));
}

function tokens(byRole) {
  const rows = Object.entries(byRole).map(([role, t]) => el("tr", {}, el("th", {}, role),
    ...["runs", "input_tokens", "output_tokens", "model_calls", "tool_calls"].map((k) => el("td", {}, fmt(t[k] || 0))),
    el("td", {}, t.cost == null ? "unpriced" : `$${t.cost.toFixed(4)}`)));
  return el("table", { class: "tokens" }, el("tr", {}, ...["role", "runs", "tokens in", "tokens out", "model calls", "tool calls", "cost"].map((h) => el("th", {}, h))), ...rows);
}

function evidence(detail) {
  const n = detail.node;
  const out = el("div", {});
  out.append(table([["outcome", n.outcome], ["parent", n.parent], ["produced by", n.produced_by],
    ["score", n.score], ["mean tokens per task", n.tokens], ["verdict", n.verdict], ["sealed test", n.sealed_test]]));
  out.append(el("h3", {}, "Scores"), table(Object.entries(n.scores)));
  out.append(el("h3", {}, "Tokens and cost per role"), tokens(detail.tokens));
  out.append(el("h3", {}, "Spend per role (gateway log)"), el("div", { id: "node-spend" }, gatewaySpend(detail.spend)));
  for (const d of detail.decisions) {
    out.append(el("h3", {}, `Decision: ${d.decision} (${d.scope})`), el("p", {}, d.reason));
    if (d.evidence.paired) out.append(el("h4", {}, "Paired statistics"), table(Object.entries(d.evidence.paired)));
    const gates = d.evidence.gates || [];
    out.append(el("h4", {}, `Gates (${gates.length})`),
      gates.length ? table(gates.map((g) => [g.name, `${g.passed ? "passed" : "FAILED"} ${g.reason || ""}`])) : el("p", {}, "none"));
    if (d.evidence.comparison) out.append(el("h4", {}, `Comparison: ${d.evidence.comparison.verdict}`),
      el("p", {}, (d.evidence.comparison.reasons || []).join("; ")));
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

function rawRecords(detail) {
  return el("div", {}, ...detail.records.map((r) =>
    el("details", {}, el("summary", {}, r.record), el("pre", {}, JSON.stringify(r.value, null, 2)))));
}

start().catch((error) => { document.body.append(el("p", { class: "failed" }, `error: ${error.message}`)); });
