// A node's diff to its parent, from git's unified diff: shown unified, or side by side (the
// parent's lines left, the node's right, a hunk's removed and added lines paired up), the
// code of every line highlighted as its file's language. The choice is kept across nodes.

import { colour, el, get, short } from "./util.js";

let layout = "unified";

// The diff's files: each its path, header lines and hunks of [kind, text] lines.
function parse(text) {
  const files = [];
  let file = null, hunk = null;
  for (const line of text.split("\n")) {
    if (line.startsWith("diff --git")) {
      file = { path: line.split(" b/").pop(), header: [line], hunks: [] };
      files.push(file);
      hunk = null;
    } else if (!file) continue;
    else if (line.startsWith("@@")) { hunk = { head: line, lines: [] }; file.hunks.push(hunk); }
    else if (!hunk) file.header.push(line);
    else if (line.startsWith("+")) hunk.lines.push(["add", line.slice(1)]);
    else if (line.startsWith("-")) hunk.lines.push(["del", line.slice(1)]);
    else if (line.startsWith(" ")) hunk.lines.push(["same", line.slice(1)]);
    else if (line) hunk.lines.push(["meta", line]);
  }
  return files;
}

function code(kind, text, path, mark) {
  const span = el("span", { class: kind });
  if (kind === "meta") span.textContent = text;
  else span.innerHTML = mark + colour(text, path);
  return span;
}

function unified(files) {
  const pre = el("pre", { class: "diff" });
  for (const f of files) {
    pre.append(...f.header.map((h, i) => el("span", { class: i ? "meta" : "file" }, h)));
    for (const h of f.hunks) {
      pre.append(el("span", { class: "hunk" }, h.head));
      for (const [kind, text] of h.lines) pre.append(code(kind, text, f.path, { add: "+", del: "-", same: " " }[kind] || ""));
    }
  }
  return pre;
}

// One hunk as rows of [left, right]: unchanged lines on both sides, a run of removed lines
// beside the run of added lines that follows it.
function rows(lines) {
  const out = [];
  let dels = [], adds = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) out.push([dels[i] ?? null, adds[i] ?? null]);
    dels = []; adds = [];
  };
  for (const [kind, text] of lines) {
    if (kind === "del") { if (adds.length) flush(); dels.push(["del", text]); }
    else if (kind === "add") adds.push(["add", text]);
    else { flush(); out.push([[kind, text], [kind, text]]); }
  }
  flush();
  return out;
}

function sideBySide(files) {
  const box = el("div", { class: "side-by-side" });
  for (const f of files) {
    const grid = el("table", { class: "split" });
    grid.append(el("tr", {}, el("th", { colspan: "2", class: "file" }, f.path)));
    for (const h of f.hunks) {
      grid.append(el("tr", {}, el("td", { colspan: "2", class: "hunk" }, h.head)));
      for (const pair of rows(h.lines)) {
        grid.append(el("tr", {}, ...pair.map((side) => el("td", {},
          side ? el("pre", {}, code(side[0], side[1], f.path, "")) : el("pre", { class: "empty" }, "")))));
      }
    }
    box.append(grid);
  }
  return box;
}

export async function diffView(api, n) {
  if (!n.snapshot_id) return el("p", {}, "This edit committed no snapshot.");
  const d = await get(api(`/nodes/${n.id}/diff`));
  if (!d.parent) return el("p", {}, "A seed: it has no parent to differ from.");
  const files = parse(d.diff);
  const view = el("div", {});
  const toggle = el("div", { class: "tabs layout" });
  const show = (name) => {
    layout = name;
    for (const b of toggle.children) b.classList.toggle("on", b.textContent === name);
    view.replaceChildren(name === "side by side" ? sideBySide(files) : unified(files));
  };
  for (const name of ["unified", "side by side"]) toggle.append(el("button", { onclick: () => show(name) }, name));
  show(layout);
  const s = d.stats;
  return el("div", {}, el("p", {}, `against ${short(d.parent)}: ${s.files} file(s), +${s.insertions} −${s.deletions}`), toggle, view);
}
