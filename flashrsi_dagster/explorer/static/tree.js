// The candidate tree: d3-hierarchy's layout, drawn as one SVG string (a 1,000-node tree is
// drawn in one parse, not 3,000 DOM calls: bench/explorer_bench.py).

import { $, fmt } from "./util.js";

export const COLOURS = {
  promoted: "#16a34a", adopted: "#4ade80", rejected: "#ef4444", pruned: "#f59e0b",
  archived: "#60a5fa", seed: "#9ca3af", unjudged: "#e5e7eb",
};
const ROOT = "__experiment__";

const escape = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function label(n) {
  const round = n.round == null ? "" : `r${n.round}${n.slot ? "." + n.slot : ""} `;
  return `${round}${fmt(n.score)}${n.sealed_test != null ? " · test " + fmt(n.sealed_test) : ""}`;
}

function curve(s, t) {
  const m = (s.y + t.y) / 2;
  return `M${s.y},${s.x}C${m},${s.x} ${m},${t.x} ${t.y},${t.x}`;
}

export function drawTree(t, onSelect) {
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
  const parts = [];
  for (const link of root.links()) {
    if (link.source.id !== ROOT) parts.push(`<path class="link" d="${curve(link.source, link.target)}"/>`);
  }
  const at = new Map(root.descendants().map((d) => [d.id, d]));
  for (const d of root.descendants()) {
    const by = d.data.produced_by && at.get(d.data.produced_by);
    if (by && by.id !== d.data.parent) {
      parts.push(`<path class="produced" d="M${by.y},${by.x}Q${(by.y + d.y) / 2},${(by.x + d.x) / 2 - 20} ${d.y},${d.x}"/>`);
    }
  }
  for (const d of root.descendants()) {
    if (d.id === ROOT) continue;
    const n = d.data;
    const r = n.score == null ? 5 : 5 + 6 * Math.max(0, Math.min(1, n.score));
    parts.push(`<g class="node" data-id="${escape(n.id)}" transform="translate(${d.y},${d.x})">`
      + `<circle r="${r}" fill="${COLOURS[n.outcome] || "#ccc"}"/>`
      + `<text x="${r + 3}" dy="0.32em">${escape(label(n))}</text>`
      + `<title>${escape(`${n.id}\n${n.outcome}: ${n.reason}`)}</title></g>`);
  }
  const box = `${dy - 20} ${x0 - dx} ${width} ${height}`;
  $("tree").innerHTML = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="${box}">${parts.join("")}</svg>`;
  for (const g of $("tree").querySelectorAll(".node")) g.addEventListener("click", () => onSelect(g.dataset.id));
  // A large tree scrolls in its box: show the node asked for, else the baseline, else the seed.
  const wanted = new URLSearchParams(location.search).get("node");
  const focus = at.get(wanted) || at.get(t.baseline) || root.children?.[0];
  if (focus) {
    const box = $("tree");
    box.scrollLeft = focus.y - (dy - 20) - box.clientWidth / 2;
    box.scrollTop = focus.x - (x0 - dx) - box.clientHeight / 2;
  }
  // What bench/explorer_bench.py reads: the tree is in the document; the next frame paints it.
  performance.mark("tree-drawn");
  requestAnimationFrame(() => setTimeout(() => performance.mark("tree-painted")));
}
