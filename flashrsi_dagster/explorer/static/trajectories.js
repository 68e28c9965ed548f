// A node's trajectories: the Worker's, whole, and every target rollout, filtered by outcome
// (passed, failed, error), by error class (the status and exception type of a broken one)
// and by task.

import { el, fmt } from "./util.js";

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
  const error = t.error ? ` · ${t.error.type}: ${t.error.message.slice(0, 120)}` : "";
  return `${t.task_id} · ${t.status} · score ${fmt(t.score)} · ${u.input_tokens} in / ${u.output_tokens} out · ${u.tool_calls} tool calls${error}`;
}

export function workerView(detail) {
  if (!detail.worker.length) return el("p", {}, "No Worker trajectory on record for this node.");
  return el("div", {}, ...detail.worker.map((t) => el("div", {}, el("h3", {}, header(t)), entries(t))));
}

const STATUS = { passed: (t) => t.status === "success", failed: (t) => t.status === "failure",
  error: (t) => !["success", "failure"].includes(t.status) };
const errorClass = (t) => (STATUS.error(t) ? `${t.status}${t.error ? ": " + t.error.type : ""}` : null);

export function targetsView(detail) {
  const list = el("div", {});
  const boxes = {};
  const classes = [...new Set(detail.target.map(errorClass).filter(Boolean))].sort();
  const pick = el("select", { id: "error-class" }, el("option", { value: "" }, "any error class"),
    ...classes.map((c) => el("option", { value: c }, `${c} (${detail.target.filter((t) => errorClass(t) === c).length})`)));
  const task = el("input", { type: "search", placeholder: "task id", id: "task-filter" });
  const draw = () => {
    const shown = detail.target.filter((t) => Object.entries(STATUS).some(([k, f]) => boxes[k].checked && f(t))
      && (!pick.value || errorClass(t) === pick.value) && t.task_id.includes(task.value.trim()));
    list.replaceChildren(el("p", { class: "hint" }, `${shown.length} of ${detail.target.length} rollouts`),
      ...shown.map((t) => el("details", {}, el("summary", {}, `[${t.split}] ${header(t)}`), entries(t))));
  };
  const filters = el("div", { class: "filters" });
  for (const k of Object.keys(STATUS)) {
    boxes[k] = el("input", { type: "checkbox", checked: "" });
    boxes[k].onchange = draw;
    filters.append(el("label", {}, boxes[k], ` ${k} (${detail.target.filter(STATUS[k]).length})`));
  }
  pick.onchange = draw;
  task.oninput = draw;
  filters.append(pick, " ", task);
  draw();
  return el("div", {}, filters, list);
}
