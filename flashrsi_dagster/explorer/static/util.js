// Small helpers every view of the explorer shares: DOM building, the JSON API, number
// formatting and syntax highlighting (highlight.js, which escapes the text it is given).

const LANGUAGES = { py: "python", md: "markdown", yaml: "yaml", yml: "yaml", json: "json",
  sh: "bash", toml: "ini", js: "javascript", ts: "typescript", txt: "plaintext" };

export const $ = (id) => document.getElementById(id);

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "onclick") node.onclick = v; else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child);
  return node;
}

export async function get(path) {
  const response = await fetch(path);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

export const short = (id) => (id && id.length === 40 ? id.slice(0, 8) : id || "-");
export const fmt = (x) => (typeof x === "number" ? (Number.isInteger(x) ? String(x) : x.toFixed(3)) : x ?? "-");

export function table(rows) {
  return el("table", {}, ...rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, String(fmt(v))))));
}

function language(path) {
  const name = LANGUAGES[path.split(".").pop()];
  return name && hljs.getLanguage(name) ? name : "plaintext";
}

export function colour(text, path) {
  return hljs.highlight(text, { language: language(path), ignoreIllegals: true }).value;
}

export function highlighted(text, path) {
  const code = el("code", { class: "hljs" });
  code.innerHTML = colour(text, path);
  return el("pre", { class: "code" }, code);
}
