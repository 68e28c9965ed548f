// A node's checks (the Dagster asset checks' evaluation, from its records): each passed, a
// warning or failed with its reason, its figures and evidence folded beneath.

import { el, table } from "./util.js";

const MARK = { passed: "✓ passed", warning: "⚠ warning", failed: "✗ failed" };

export function checksLine(checks) {
  if (!checks.length) return el("p", { class: "checks-line hint" }, "No checks: the seed is not judged.");
  const counts = ["passed", "warning", "failed"].map((s) => [s, checks.filter((c) => c.status === s).length]);
  return el("p", { class: "checks-line" }, "Checks: ",
    ...counts.filter(([, n]) => n).map(([s, n]) => el("span", { class: `check-${s}` }, `${n} ${s} `)));
}

export function checksView(checks) {
  if (!checks.length) return el("p", { class: "hint" }, "No checks: the seed is not judged.");
  return el("div", { id: "checks" }, ...checks.map((c) => el("div", { class: `check check-${c.status}`, "data-check": c.name },
    el("h4", {}, el("span", { class: "mark" }, MARK[c.status]), ` ${c.name}`),
    el("p", { class: "reason" }, c.summary),
    el("details", {}, el("summary", {}, `figures (from ${c.source})`),
      el("p", { class: "hint" }, c.description), table(Object.entries(c.metadata)),
      ...Object.entries(c.markdown).map(([k, v]) => el("div", {}, el("h5", {}, k), el("pre", {}, v)))))));
}
