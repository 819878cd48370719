// The SDD-patch approval page: the patches that wait for a person, each with its diff and one Approve button.
// Every text goes into the page as text (textContent / text nodes), never as HTML.
"use strict";

const TOKEN = document.querySelector('meta[name="graphlemon-token"]').content;
const PROJECT = new URLSearchParams(location.search).get("project") || "";

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v); else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}
// control and bidi characters shown as <U+XXXX>, never interpreted (newlines and tabs kept)
const plain = (text) => String(text).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]/g,
  (c) => `<U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}>`);

async function api(method, path) {
  const headers = { "Accept": "application/json" };
  if (method !== "GET") { headers["X-GraphLemon-Token"] = TOKEN; headers["Content-Type"] = "application/json"; }
  const resp = await fetch(path, { method, headers, credentials: "same-origin", body: method === "GET" ? undefined : "{}" });
  const data = await resp.json();
  if (!resp.ok) throw new Error(`error[${data.error.code}]: ${data.error.message}`);
  return data;
}

function diffBlock(diff) {
  return h("pre", { class: "diff" }, diff.split("\n").map((line) =>
    h("span", { class: line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : "" }, plain(line) + "\n")));
}

function card(p) {
  const status = h("span", { class: "status" });
  const button = h("button", { type: "button", "data-run": p.run_id }, "Approve this SDD patch");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const done = await api("POST", `/api/projects/${encodeURIComponent(PROJECT)}/patches/${encodeURIComponent(p.run_id)}/approve`);
      status.className = "done"; status.textContent = `Approved: the SDD is now ${done.artifact_id}. Resume the task to re-code ${p.units.join(", ")}: `;
      if (done.task_id) status.append(h("a", { href: `/#/p/${encodeURIComponent(PROJECT)}/t/${encodeURIComponent(done.task_id)}` }, "open the task"));
      button.remove();
    } catch (e) { button.disabled = false; status.className = "msg error"; status.textContent = plain(e.message); }
  });
  return h("section", { class: "patch", "data-run": p.run_id },
    h("h2", {}, `Run ${plain(p.run_id)} · ${plain(p.units.join(", "))}`),
    h("p", {}, plain(p.root_cause)),
    h("p", { class: "why" }, "Waits for a person: ", plain(p.review || "")),
    p.problem ? h("p", { class: "msg error" }, "Cannot be applied as it is: ", plain(p.problem)) : diffBlock(p.diff),
    p.problem ? null : button, status);
}

async function load() {
  const box = document.getElementById("patches");
  document.getElementById("project-label").textContent = PROJECT;
  try {
    const data = await api("GET", `/api/projects/${encodeURIComponent(PROJECT)}/patches`);
    box.replaceChildren(...(data.patches.length ? data.patches.map(card) : [h("p", { class: "muted" }, "No SDD patch waits for a person.")]));
  } catch (e) { box.replaceChildren(h("p", { class: "msg error" }, plain(e.message))); }
}
load();
