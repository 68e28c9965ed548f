// The experiment's plots (uPlot), from the figures the API computes (`plots.py`): the score
// over rounds with the best so far, the Pareto frontier of accuracy × tokens, the dev–test gap.

import { $, el, fmt, short } from "./util.js";

const width = () => Math.max(300, $("left").clientWidth - 30);

function chart(target, opts, data) {
  target.replaceChildren();
  return new uPlot({ width: width(), height: 200, scales: { x: { time: false } }, ...opts }, data, target);
}

function scoreOverRounds(p) {
  if (!p.rounds.length) { $("plot").textContent = "No scores yet."; return; }
  chart($("plot"), {
    axes: [{ incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500] }, {}],
    series: [{ label: "round" },
      { label: "best score of the round", stroke: "#2563eb", points: { size: 7 } },
      { label: "best so far", stroke: "#16a34a", width: 2 }],
  }, [p.rounds, p.best, p.best_so_far]);
}

function pareto(p, onSelect) {
  const box = $("pareto");
  if (!p.points.length) { box.textContent = "No token figures: the behaviour signal measured none."; return; }
  // uPlot wants ascending x: the points come sorted by tokens; the frontier is a step line.
  const front = new Set(p.frontier);
  const xs = p.points.map((q) => q.tokens);
  const all = p.points.map((q) => q.score);
  const onFront = p.points.map((q) => (front.has(q.id) ? q.score : null));
  chart(box, {
    series: [{ label: "mean tokens per task" },
      { label: "candidate", stroke: "#9ca3af", width: 0, points: { show: true, size: 6, fill: "#9ca3af" } },
      { label: "Pareto frontier", stroke: "#dc2626", width: 2, spanGaps: true, points: { show: true, size: 8 } }],
    axes: [{ label: "mean target tokens per task" }, { label: "score" }],
    // room either side, so that the first and last points are not cut by the frame
    scales: { x: { time: false, range: (_, lo, hi) => [lo - ((hi - lo) * 0.05 || 1), hi + ((hi - lo) * 0.05 || 1)] } },
  }, [xs, all, onFront]);
  const list = el("p", { class: "hint", id: "frontier" }, "On the frontier: ");
  for (const id of p.frontier) {
    list.append(el("a", { href: "#", "data-node": id, onclick: (e) => { e.preventDefault(); onSelect(id); } }, short(id)), " ");
  }
  box.append(list);
}

function gap(rows) {
  const box = $("gap");
  if (!rows.length) { box.textContent = "No sealed test on record yet: the gap shows once the experiment is finalised."; return; }
  const xs = rows.map((_, i) => i + 1);
  chart(box, {
    series: [{ label: "tested version" },
      { label: "search score", stroke: "#2563eb", width: 0, points: { show: true, size: 8 } },
      { label: "sealed test", stroke: "#7c3aed", width: 0, points: { show: true, size: 8 } }],
    axes: [{ incrs: [1], values: (_, ticks) => ticks.map((i) => (rows[i - 1] ? (rows[i - 1].round == null ? short(rows[i - 1].id) : `r${rows[i - 1].round}`) : "")) }, {}],
    scales: { x: { time: false, range: [0, rows.length + 1] } },
  }, [xs, rows.map((r) => r.search), rows.map((r) => r.test)]);
  box.append(el("table", { class: "gap" }, el("tr", {}, ...["version", "search", "test", "gap"].map((h) => el("th", {}, h))),
    ...rows.map((r) => el("tr", {}, el("td", {}, r.round == null ? short(r.id) : `r${r.round}.${r.slot} ${short(r.id)}`),
      el("td", {}, fmt(r.search)), el("td", {}, fmt(r.test)), el("td", {}, fmt(r.gap))))));
}

export function drawPlots(t, onSelect) {
  scoreOverRounds(t.plots.score_over_rounds);
  pareto(t.plots.pareto, onSelect);
  gap(t.plots.dev_test_gap);
}
