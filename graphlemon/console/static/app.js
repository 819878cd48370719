// GraphLemon console: a small page script, no build step, no library.
// Every piece of ledger / user text goes into the page as text (textContent / text nodes), never as HTML.
"use strict";

// the console's token: given to the page only when this browser opened the URL `graphlemon console` printed; a
// page older than a console restart fetches the new one (its cookie proves it opened that URL), else says so
let TOKEN = document.querySelector('meta[name="graphlemon-token"]').content;
const STAGE_COLUMNS = ["planner", "coder", "tester", "integrator", "bug-triager", "validator"];
const NODE_STATUSES = ["pending", "running", "verifying", "reflecting", "retrying", "waiting_for_quota", "blocked", "stopped", "cancelled", "done", "sent_back", "failed"];
const SEVERITIES = ["low", "medium", "high", "critical"];
const EXECUTORS = ["scripted", "anthropic", "claude_code"];

// -- small DOM helpers ------------------------------------------------------------------------------
// bidi overrides and control characters in people's and agents' text are shown as their code point (a goal cannot
// reorder what follows it on screen); the server does the same (graphlemon/wording.py `printable`)
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const safeText = (t) => String(t).replace(UNSAFE, (c) => `<U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}>`);
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : k === "title" ? safeText(v) : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(safeText(c)));
  }
  return el;
}
// the words people read for a status (the server's graphlemon/wording.py); the internal name is the tooltip
let WORDS = { status: {}, reason: {}, node: {}, category: {} };
const said = (name, table) => (name === null || name === undefined ? "" : (WORDS[table] || {})[name] || String(name).replace(/_/g, " "));
const statusWords = (status, reason) => said(status, "status") + (reason ? `: ${said(reason, "reason")}` : "");
const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(safeText(c)));
  return el;
}
const pill = (status, reason) => h("span", { class: `pill s-${status}`, dataset: { status }, title: reason ? `${status} (${reason})` : status },
  reason ? statusWords(status, reason) : said(status, "status"));
// a live holder that took a blocked or paused task's lease after the task last changed (the lease journal: run
// state running or stopping, lease since >= the task's update) is a resume: the task is being resumed from the moment
// the lease is taken, not from its run's first event. (The run that blocked the task, still letting go, took it before.)
const BLOCKED_TASK = new Set(["blocked_pending_human", "paused"]);
const ENDED_TASK = new Set(["done", "abandoned"]);
const resuming = (task, run) => Boolean(task && BLOCKED_TASK.has(task.status) && run && (run.state === "running" || run.state === "stopping")
  && run.lease && new Date(run.lease.since) >= new Date(task.updated_at));
const taskPill = (task, run) => (resuming(task, run)
  ? h("span", { class: "pill s-resuming", dataset: { status: "resuming" }, title: `${task.status}${task.blocked_reason ? ` (${task.blocked_reason})` : ""} until the resumed run records its first step` },
    run.state === "stopping" ? "resuming, stop requested" : "resuming")
  : pill(task.status, task.blocked_reason));
const fmtTime = (iso) => (iso ? new Date(iso).toLocaleTimeString([], { hour12: false }) : "");
// one date form everywhere (walk6: US dates beside 24-hour times): the local day as YYYY-MM-DD
const fmtDay = (t) => `${t.getFullYear()}-${String(t.getMonth() + 1).padStart(2, "0")}-${String(t.getDate()).padStart(2, "0")}`;
// a timeline's time: the clock time, the date when it is not today, and the full date on hover
function timeCell(iso, prev) {
  const t = new Date(iso); const today = new Date().toDateString() === t.toDateString();
  const gap = prev ? (t - new Date(prev)) / 1000 : null;
  return h("td", { class: "time", title: t.toString() }, today ? fmtTime(iso) : `${fmtDay(t)} ${fmtTime(iso)}`,
    gap !== null && gap >= 1 ? h("div", { class: "gap" }, `+${fmtDuration(gap)}`) : null);
}
const fmtDuration = (sec) => (sec < 60 ? `${Math.round(sec)} s` : sec < 3600 ? `${Math.floor(sec / 60)} min ${Math.round(sec % 60)} s` : `${Math.floor(sec / 3600)} h ${Math.round((sec % 3600) / 60)} min`);
const fmtDateTime = (iso) => (iso ? `${fmtDay(new Date(iso))} ${fmtTime(iso)}` : "");
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
const fmtNum = (n) => (n === null || n === undefined ? "—" : Number(n).toLocaleString());
const main = () => document.getElementById("main");
// replaceChildren without the nulls a conditional child leaves (the DOM would show them as the text "null")
const put = (el, ...kids) => el.replaceChildren(...kids.flat().filter((k) => k !== null && k !== undefined && k !== false));

// -- API ----------------------------------------------------------------------------------------------
class ApiError extends Error {
  constructor(status, error) { super(`error[${error.code}]: ${error.message}`); this.status = status; this.error = error; }
}
async function api(method, path, body, retried) {
  const opts = { method, headers: { "Accept": "application/json" }, credentials: "same-origin" };
  if (method !== "GET") {
    opts.headers["Content-Type"] = "application/json";
    opts.headers["X-GraphLemon-Token"] = TOKEN;
    opts.body = JSON.stringify(body || {});
  }
  const resp = await fetch(path, opts);
  const type = resp.headers.get("content-type") || "";
  const data = type.includes("json") ? await resp.json() : await resp.text();
  if (!resp.ok) {
    const error = (data && data.error) || { code: "ERROR", message: String(data) };
    if (error.token && !retried && await refreshToken()) return api(method, path, body, true);
    if (error.token) tokenNotice(NO_TOKEN[error.token] || NO_TOKEN.missing);
    throw new ApiError(resp.status, error);
  }
  return data;
}
async function refreshToken() {
  try {
    const r = await fetch("/api/token", { credentials: "same-origin", headers: { "Accept": "application/json" } });
    if (!r.ok) return false;
    TOKEN = (await r.json()).token; tokenNotice(null); return true;
  } catch (e) { return false; }
}
// without the console's token nothing of the projects can be read (every API read is PERMISSION_DENIED) nor done
const NO_TOKEN = {
  missing: "This browser has no console token: it can neither read this console's projects nor act.",
  stale: "This console restarted with a new token, and this browser does not have it: nothing can be read or done.",
};
function tokenNotice(text) {
  const el = document.getElementById("token-notice");
  if (!text) { el.hidden = true; return; }
  el.hidden = false;
  el.replaceChildren(text, " Open the URL ", h("code", {}, "graphlemon console"), " printed (it carries the token), then ",
    h("button", { type: "button", class: "small", onclick: () => location.reload() }, "reload"), ".");
}
function message(el, err, okText) {
  el.replaceChildren(); delete el.dataset.until;
  el.hidden = false;
  if (err) { el.className = "msg error"; el.dataset.code = err.error ? err.error.code : "ERROR"; el.textContent = err.message; }
  else { el.className = "msg ok"; delete el.dataset.code; el.textContent = okText; }
}

// -- live connection (REQ-12) ---------------------------------------------------------------------------
// One WebSocket per page subscription. Every event carries its ledger file and byte offset; the page keeps
// the last offset per file, applies an event only if it is past that (so each is applied once), and sends
// those cursors when it reconnects: the server answers with exactly the missed events, or a fresh snapshot.
window.glStats = { applied: 0, snapshots: 0, resumed: 0, byKind: {} };
class Live {
  constructor(project, task, handlers) {
    this.project = project; this.task = task; this.handlers = handlers;
    this.cursors = null; this.delay = 250; this.closed = false; this.ws = null;
    this.connect();
  }
  connect() {
    if (this.closed) return;
    window.glStats.connectAt = window.glStats.connectAt || performance.now();
    const proto = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${proto}://${location.host}/ws`);
    this.ws = ws;
    ws.onopen = () => ws.send(JSON.stringify({ project: this.project, task: this.task, cursors: this.cursors }));
    ws.onmessage = (m) => { try { this.receive(JSON.parse(m.data)); } catch (e) { console.error(e); } };
    ws.onclose = (ev) => this.dropped(ev);
    ws.onerror = () => {};
  }
  receive(msg) {
    if (msg.type === "error") { this.refused = msg.error; return; }
    if (msg.type === "snapshot") {
      window.glStats.snapshotAt = performance.now();
      this.cursors = msg.cursors; window.glStats.snapshots++;
      this.live(); this.handlers.snapshot(msg.state);
      return;
    }
    if (msg.type === "resumed") { window.glStats.resumed++; this.live(); }
    for (const ev of msg.events || []) {
      const seen = this.cursors[ev.file] || 0;
      if (ev.offset <= seen) continue; // applied once
      this.cursors[ev.file] = ev.offset;
      window.glStats.applied++;
      window.glStats.byKind[ev.kind] = (window.glStats.byKind[ev.kind] || 0) + 1;
      this.handlers.event(ev);
    }
  }
  live() { this.delay = 250; setBanner(null); document.body.dataset.live = "open"; }
  dropped(ev) {
    if (this.closed) return;
    if (ev.code >= 4400 && ev.code < 4500) {
      const err = this.refused || { code: "ERROR", message: ev.reason || "refused" };
      document.body.dataset.live = "refused";
      setBanner(`error[${err.code}]: ${err.message}`, "error", err.code);
      if (this.handlers.refused) this.handlers.refused(err);
      return;
    }
    document.body.dataset.live = "lost";
    setBanner("Live connection lost — reconnecting…", "lost");
    setTimeout(() => this.connect(), this.delay);
    this.delay = Math.min(this.delay * 2, 5000);
  }
  close() { this.closed = true; if (this.ws) this.ws.close(); }
}
function setBanner(text, kind, code) {
  const b = document.getElementById("banner");
  if (!text) { b.hidden = true; b.textContent = ""; delete b.dataset.code; return; }
  b.hidden = false; b.className = kind; b.textContent = text;
  if (code) b.dataset.code = code; else delete b.dataset.code;
}

// -- router ---------------------------------------------------------------------------------------------
let current = null; // the page's Live, closed on navigation
function route() {
  if (current) { current.close(); current = null; }
  setBanner(null);
  document.body.dataset.live = "idle";
  const parts = location.hash.replace(/^#\/?/, "").split("?")[0].split("/").filter(Boolean).map(decodeURIComponent);
  const [p, pid, t, tid, sub] = parts;
  updateNav(p === "p" ? pid : null, p === "p" ? (t || "dashboard") : p === "runs" ? "runs" : "projects");
  if (p === "p" && pid && t === "t" && tid && sub === "budget") return pageBudget(pid, tid);
  if (p === "p" && pid && t === "t" && tid && sub === "logs") return pageTaskLogs(pid, tid);
  if (p === "p" && pid && t === "logs" && tid) return pageLogViewer(pid, tid, hashQuery());
  if (p === "p" && pid && t === "logs") return pageProjectLogs(pid);
  if (p === "p" && pid && t === "artifacts" && tid) return pageArtifact(pid, tid);
  if (p === "runs") return pageRuns(hashQuery());
  if (p === "p" && pid && t === "t" && tid) return pageTask(pid, tid);
  if (p === "p" && pid && t === "goal") return pageGoal(pid);
  if (p === "p" && pid && t === "bug") return pageBug(pid);
  if (p === "p" && pid && t === "bugs" && tid) return pageBugDetail(pid, tid);
  if (p === "p" && pid && t === "bugs") return pageBugs(pid, new URLSearchParams(location.hash.split("?")[1] || ""));
  if (p === "p" && pid && t === "deploy") return pageDeploy(pid, tid);
  if (p === "p" && pid && t === "skills" && tid) return pageSkillIteration(pid, tid);
  if (p === "p" && pid && t === "skills") return pageSkills(pid);
  if (p === "p" && pid) return pageDashboard(pid);
  return pageProjects();
}
const hashQuery = () => new URLSearchParams(location.hash.split("?")[1] || "");
const projectNames = {};
function updateNav(pid, active) {
  document.getElementById("project-label").textContent = pid ? `project ${projectNames[pid] || pid}` : "";
  if (pid && !projectNames[pid]) api("GET", "/api/projects").then((ps) => { // the header names the project
    for (const p of ps) projectNames[p.project_id] = p.name;
    if (projectNames[pid] && currentPid() === pid) document.getElementById("project-label").textContent = `project ${projectNames[pid]}`;
  }).catch(() => {});
  for (const a of document.querySelectorAll("#nav a")) {
    const nav = a.dataset.nav;
    a.classList.toggle("active", nav === active || (nav === "dashboard" && active === "t"));
    if (a.classList.contains("needs-project")) {
      if (pid) { a.classList.remove("disabled"); a.href = nav === "dashboard" ? `#/p/${encodeURIComponent(pid)}` : `#/p/${encodeURIComponent(pid)}/${nav}`; }
      else { a.classList.add("disabled"); a.removeAttribute("href"); }
    }
  }
}
window.addEventListener("DOMContentLoaded", async () => {
  if (!TOKEN) refreshToken().then((ok) => { if (!ok) tokenNotice(NO_TOKEN.missing); });
  try { WORDS = await api("GET", "/api/words"); } catch (e) { console.error(e); } // without them: the names, spaced
  // The first route reads the hash as it is now, so a hash changed while the words loaded is not missed; the
  // listener comes after it, so that page is drawn once (drawn twice, a form filled in between was emptied).
  route();
  window.addEventListener("hashchange", route);
  document.body.dataset.ready = "1";
});

// -- v_project_setup ------------------------------------------------------------------------------------
async function pageProjects() {
  const list = h("div", { id: "projects" }, h("p", { class: "muted" }, "Loading…"));
  const path = h("input", { type: "text", id: "project-path", placeholder: "/path/to/repository", required: true });
  const msg = h("div", { id: "project-msg", hidden: true });
  const form = h("form", { class: "stack card", id: "add-project" },
    h("label", { for: "project-path" }, "Add a project: folder path"), path, h("br"),
    h("button", { type: "submit" }, "Add project"), msg);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = { path: path.value.trim(), git_init: false };
    try {
      let res;
      try { res = await api("POST", "/api/projects", body); }
      catch (err) {
        if (!(err.error && err.error.needs_git_init)) throw err;
        if (!window.confirm(err.error.question)) throw err; // declining writes nothing
        res = await api("POST", "/api/projects", { ...body, git_init: true });
      }
      let first = "";
      if (res.has_commit === false && window.confirm(`${res.root} has no commit yet, and a goal branches from one. Commit every file it holds now, as its first commit?`)) {
        const c = await api("POST", `/api/projects/${encodeURIComponent(res.project_id)}/first-commit`, {});
        first = `; first commit ${c.commit.slice(0, 10)}`;
      } else if (res.has_commit === false) first = "; no commit yet: commit the starting code before a goal";
      message(msg, null, `${res.created ? "Created" : "Already a project:"} ${res.project_id} at ${res.root}${res.git_initialised ? " (git init)" : ""}${first}`);
      loadProjects(list);
    } catch (err) { message(msg, err); }
  });
  main().replaceChildren(h("h1", {}, "Projects"), list, form);
  loadProjects(list);
}
async function loadProjects(list) {
  try {
    const projects = await api("GET", "/api/projects");
    if (!projects.length) { list.replaceChildren(h("p", { class: "muted" }, "No projects yet: add one below, or run graphlemon init DIR.")); return; }
    const forget = async (p) => {
      if (!window.confirm(`Remove ${p.name} (${p.root}) from this list? Its folder and ledger stay as they are.`)) return;
      try { await api("POST", `/api/projects/${encodeURIComponent(p.project_id)}/forget`, {}); loadProjects(list); }
      catch (err) { list.prepend(h("div", { class: "msg error" }, err.message)); }
    };
    const rename = async (p) => {
      const name = window.prompt("Name of this project", p.name);
      if (name === null) return;
      try { await api("POST", `/api/projects/${encodeURIComponent(p.project_id)}/name`, { name }); loadProjects(list); }
      catch (err) { list.prepend(h("div", { class: "msg error", dataset: { code: err.error ? err.error.code : "" } }, err.message)); }
    };
    const row = (p) => h("tr", { dataset: { project: p.project_id, root: p.root, available: p.available ? "yes" : "no" } },
      h("td", {}, p.available ? h("a", { href: `#/p/${encodeURIComponent(p.project_id)}` }, p.name) : p.name, h("div", { class: "muted small" }, p.project_id)),
      h("td", {}, p.root), h("td", {}, p.available ? "" : "missing"),
      h("td", {}, h("button", { type: "button", class: "secondary small rename", onclick: () => rename(p) }, "rename"), " ",
        h("button", { type: "button", class: "secondary small forget", onclick: () => forget(p) }, "remove")));
    const head = h("tr", {}, ["project", "folder", "", ""].map((c) => h("th", {}, c)));
    const here = projects.filter((p) => p.available); const gone = projects.filter((p) => !p.available);
    put(list, h("table", { id: "projects-table" }, head, here.map(row)),
      gone.length ? h("details", { id: "missing-projects" }, h("summary", {}, `${gone.length} missing project(s): their folder or project.json is gone`),
        h("button", { type: "button", class: "secondary", id: "forget-missing", onclick: async () => {
          try { for (const p of gone) await api("POST", `/api/projects/${encodeURIComponent(p.project_id)}/forget`, {}); loadProjects(list); }
          catch (err) { list.prepend(h("div", { class: "msg error" }, err.message)); }
        } }, "remove every missing project from the list"),
        h("table", {}, gone.map(row))) : null);
  } catch (err) { list.replaceChildren(h("div", { class: "msg error" }, err.message)); }
}

// -- v_dashboard ------------------------------------------------------------------------------------------
function pageDashboard(pid) {
  const body = h("div", { id: "dashboard" }, h("p", { class: "muted" }, "Connecting…"));
  const spend = h("p", { id: "project-spend", class: "muted" });
  main().replaceChildren(h("h1", {}, "Dashboard"), spend, body);
  let refetch = null;
  const RUN_NOTE = { idle: "queued, and no run picks it up: open it to run it", interrupted: "its run stopped: open it to run it again" };
  const render = (state) => {
    const tasks = state.tasks;
    if (state.spend) put(spend, `${state.spend.tasks} task(s) · ${fmtNum(state.spend.tokens)} tokens · $${state.spend.cost_usd.toFixed(4)} in all · `,
      h("a", { href: `#/p/${encodeURIComponent(pid)}/bugs?status=open`, id: "project-open-bugs" }, `${state.bugs ? state.bugs.open : 0} open bug(s)`),
      state.bugs && state.bugs.open_without_task ? ` (${state.bugs.open_without_task} on no task: reported by people)` : "");
    if (!tasks.length) { body.replaceChildren(h("p", { class: "muted" }, "No tasks yet: start one from New goal.")); return; }
    body.replaceChildren(h("table", { id: "tasks" },
      h("tr", {}, ["task", "status", "round", "spend / budget", "open bugs", "goal", "updated"].map((c) => h("th", {}, c))),
      tasks.map((t) => h("tr", { dataset: { task: t.task_id, status: t.status, run: t.run || "" } },
        h("td", {}, h("a", { href: `#/p/${encodeURIComponent(pid)}/t/${encodeURIComponent(t.task_id)}` }, t.task_id)),
        h("td", {}, pill(t.status, t.blocked_reason), refusedBadge(t.refused_actions),
          RUN_NOTE[t.run] ? h("div", { class: "run-note" }, RUN_NOTE[t.run]) : null),
        h("td", {}, String(t.loop_round)),
        h("td", {}, spendText(t)),
        h("td", {}, String(t.open_bugs)),
        h("td", { class: "prose" }, t.goal_text),
        h("td", { class: "time" }, fmtWhen(t.updated_at))))));
  };
  const reload = async () => { try { render(await api("GET", `/api/projects/${encodeURIComponent(pid)}/tasks`)); } catch (e) { console.error(e); } };
  current = new Live(pid, null, {
    snapshot: (state) => render(state),
    event: () => { clearTimeout(refetch); refetch = setTimeout(reload, 150); }, // one fold on the server per burst
    refused: () => body.replaceChildren(h("p", { class: "muted" }, "Nothing to show (the banner says why). ", h("a", { href: "#/" }, "Projects"))),
  });
  const timer = setInterval(() => { if (!document.getElementById("dashboard")) clearInterval(timer); else reload(); }, 5000); // runs are not in the ledger
}
function spendText(t) {
  const used = `${t.used_tokens.toLocaleString()} tok · $${t.used_cost_usd.toFixed(4)}`;
  if (!t.budget) return used;
  const b = t.budget;
  return `${used} / ${b.limit_type === "token_count" ? `${b.limit.toLocaleString()} tok` : `$${b.limit}`}`;
}

// -- v_task_detail + v_graph_visualizer -----------------------------------------------------------------
function pageTask(pid, tid) {
  const head = h("div", { id: "task-head" });
  const graph = h("div", { class: "graph-wrap", id: "graph" });
  const legend = h("div", { class: "legend" }, NODE_STATUSES.map((st) => h("span", { title: st }, h("i", { class: `lg-${st}` }), said(st, "node"))));
  const rest = h("div", { id: "task-rest" });
  const acts = h("div", { id: "task-actions" });
  const actMsg = h("div", { id: "action-msg", hidden: true }); // outside the redrawn box: a result stays on the page
  main().replaceChildren(head, acts, actMsg, h("h2", {}, "DevLoop graph"), legend, graph, rest); // the next step above the fold
  for (const i of legend.querySelectorAll("i")) i.style.background = getLegendColour(i.className.slice(3));
  const nodes = new Map();
  let detail = null; let refetch = null;
  let actsKey = null; // the actions box is redrawn only when what it offers changes (a note being typed stays)
  const drawActs = () => {
    const run = detail.run || {};
    const key = JSON.stringify([detail.task.status, detail.escalation, detail.actions, detail.next, run.state, run.lease && [run.lease.lease_id, run.lease.stop_requested_by], run.launch && [run.launch.launch_id, run.launch.state]]);
    if (key !== actsKey) { actsKey = key; acts.replaceChildren(actions(pid, detail, actMsg)); }
    if (actMsg.dataset.until && run.state !== "stopping" && run.state !== "running") { // a requested stop is done
      message(actMsg, null, `The ${actMsg.dataset.until} is done: no run holds this task any more.`);
    }
  };
  const pollRun = async () => { // the run is not in the ledger: its state is read while the page is open
    if (!detail) return;
    try {
      const r = await api("GET", `/api/projects/${encodeURIComponent(pid)}/tasks/${encodeURIComponent(tid)}/run`);
      const was = resuming(detail.task, detail.run);
      detail.run = { state: r.state, lease: r.lease, launch: r.launch, last_run: r.last_run }; detail.actions = r.actions; detail.next = r.next; drawActs();
      if (was !== resuming(detail.task, detail.run)) { drawHead(head, pid, detail); drawGraph(graph, nodes, detail); drawRest(rest, pid, detail); }
    } catch (e) { console.error(e); }
  };
  window.glRefreshRun = pollRun;
  const timer = setInterval(() => { if (!document.getElementById("task-actions")) clearInterval(timer); else pollRun(); }, 2000);
  current = new Live(pid, tid, {
    snapshot: (state) => {
      detail = state; nodes.clear();
      for (const n of state.nodes) nodes.set(n.node_exec_id, n);
      drawHead(head, pid, detail); drawGraph(graph, nodes, detail);
      // the browser paints the graph first; the rest (timeline, bugs, artifacts) comes in the next task
      requestAnimationFrame(() => setTimeout(() => {
        document.body.dataset.painted = String(performance.now()); // after the frame that showed the graph
        actsKey = null; drawActs(); drawRest(rest, pid, detail);
      }, 0));
    },
    event: (ev) => {
      if (ev.kind === "node" && ev.record.event !== "violation") {
        const r = ev.record; const known = nodes.get(r.node_exec_id);
        const failed = r.error && ["reflecting", "failed", "blocked"].includes(r.status) ? { attempt: r.attempt, status: r.status, error_code: r.error_code, error: r.error.slice(0, 600), ts: r.ts } : null;
        if (known && !failed) { Object.assign(known, { status: r.status, attempt: r.attempt }); recolour(graph, known); }
        else {
          const n = known || { ...r, node_exec_id: r.node_exec_id, failures: [] };
          Object.assign(n, { status: r.status, attempt: r.attempt });
          if (failed) n.failures = [...(n.failures || []).filter((f) => f.attempt !== failed.attempt), failed];
          nodes.set(r.node_exec_id, n); drawGraph(graph, nodes, detail);
        }
      }
      if (ev.kind === "task" && detail) { detail.task.status = ev.record.status; detail.task.blocked_reason = ev.record.blocked_reason || null; detail.task.updated_at = ev.record.ts; drawHead(head, pid, detail); drawGraph(graph, nodes, detail); }
      if (ev.kind !== "node") { // timeline, bugs, usage, artifacts: re-read the task's view (debounced)
        clearTimeout(refetch);
        refetch = setTimeout(async () => {
          try {
            detail = await api("GET", `/api/projects/${encodeURIComponent(pid)}/tasks/${encodeURIComponent(tid)}`);
            drawHead(head, pid, detail); drawActs(); drawRest(rest, pid, detail);
            const drawn = graph.glDetail || {}; const flips = (x) => resuming(x.task, x.run);
            if (JSON.stringify(detail.pending_units) !== JSON.stringify(drawn.pending_units) || flips(drawn) !== flips(detail)) drawGraph(graph, nodes, detail);
            else graph.glDetail = detail;
          }
          catch (e) { console.error(e); }
        }, 150);
      }
    },
    refused: () => { clearInterval(timer); main().replaceChildren(h("p", { class: "muted", id: "task-missing" }, "Nothing to show (the banner says why). ",
      h("a", { href: `#/p/${encodeURIComponent(pid)}` }, "Back to the dashboard"))); },
  });
}
const LEGEND = { pending: "#ffffff", sent_back: "#fde68a", running: "#bfdbfe", verifying: "#c7d2fe", reflecting: "#e9d5ff", retrying: "#fed7aa", waiting_for_quota: "#fef08a", blocked: "#fecaca", stopped: "#e5e7eb", cancelled: "#e5e7eb", done: "#bbf7d0", failed: "#f87171" };
const getLegendColour = (st) => LEGEND[st] || "#f3f4f6";

function currentPid() { return location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent)[1]; }
function drawHead(head, pid, d) {
  const t = d.task;
  const pidq = encodeURIComponent(pid); const tidq = encodeURIComponent(t.task_id);
  const taken = resuming(t, d.run);
  const times = taken ? { ...(d.times || {}), ended: null } : d.times || {}; const p = d.params || {};
  const flowRuns = (d.flow_runs || []).map((r, i) => r.url
    ? h("a", { href: r.url, target: "_blank", rel: "noopener", class: "flow-run", title: `Prefect flow run ${r.flow_run_id}, started ${r.ts}` }, `Prefect flow run ${i + 1}`)
    : h("span", { class: "flow-run muted", title: "its Prefect server is not running now" }, `Prefect flow run ${r.flow_run_id.slice(0, 8)}…`));
  const limits = [p.executor ? `executor ${p.executor}` : null, p.engine ? `engine ${p.engine}` : null,
    p.max_unit_attempts ? `${plural(p.max_unit_attempts, "attempt")} per unit` : null, p.max_loop_rounds ? `${plural(p.max_loop_rounds, "round")} at most` : null,
    p.budget ? `budget ${p.budget.limit_type === "token_count" ? `${fmtNum(p.budget.limit)} tokens` : `$${p.budget.limit}`}` : "no budget"].filter(Boolean);
  head.replaceChildren(...[
    h("h1", {}, `${t.task_id} `, taskPill(t, d.run), refusedBadge(d.violations ? d.violations.count : 0)),
    h("p", { class: "goal" }, t.goal_text),
    h("p", { id: "task-times", class: "muted" }, "started ", fmtWhen(times.started),
      times.ended ? [ENDED_TASK.has(t.status) ? " · ended " : " · stopped ", fmtWhen(times.ended), ` · took ${fmtDuration(times.duration_s)}`,
        times.waited_s >= 1 ? ` (${fmtDuration(times.waited_s)} of it waiting for a person)` : ""]
        : noRun(d) ? [" · ", ...lastRunSaid(d.run.last_run)] : [" · going on for ", h("span", { id: "task-elapsed" }, fmtDuration((Date.now() - new Date(times.started)) / 1000))],
      flowRuns.length ? " · " : "", flowRuns.flatMap((a, i) => (i ? [", ", a] : [a]))),
    h("p", { id: "task-params", class: "muted" }, limits.join(" · "), p.playbook ? [" · playbook ", h("code", {}, p.playbook)] : ""),
    h("p", { class: "muted" }, `round ${t.loop_round} · ${d.usage.tokens.toLocaleString()} tokens · $${d.usage.cost_usd.toFixed(4)} in ${d.usage.calls} call(s) · `,
      h("a", { href: `#/p/${pidq}/t/${tidq}/budget`, id: "budget-link" }, "budget"), " · ",
      h("a", { href: `#/p/${pidq}/t/${tidq}/logs`, id: "logs-link" }, "execution logs")),
    t.note && !taken ? h("p", {}, h("b", {}, "note: "), t.note) : null,
    resumeNote(t) && resumeNote(t) !== t.note ? h("p", { id: "resume-note-said" }, h("b", {}, "your resume note: "), resumeNote(t)) : null].filter(Boolean));
}

// one request per click: `hold(true)` from the first click until the answer, and a second click meanwhile (a
// double-click) sends nothing; `key` names what is in flight (a task's API base, a project's New goal form)
const actionsInFlight = new Set(); // keys with a person's action sent and not yet answered
async function oneAtATime(key, hold, send) {
  if (actionsInFlight.has(key)) return;
  actionsInFlight.add(key); hold(true);
  try { await send(); } finally { actionsInFlight.delete(key); hold(false); }
}
// an action's id: the server runs an action once per id, whatever reaches it twice
const newActionId = () => (crypto.randomUUID ? crypto.randomUUID() : `a-${Date.now()}-${Math.random().toString(36).slice(2)}`);

// the human actions the task's state allows (the server sends them: `d.actions`), and whether anything runs it
function actions(pid, d, msg) {
  const t = d.task; const allowed = new Set(d.actions || []);
  const next = d.next || { action: "none" };
  const base = `/api/projects/${encodeURIComponent(pid)}/tasks/${encodeURIComponent(t.task_id)}`;
  const budgetHref = `#/p/${encodeURIComponent(pid)}/t/${encodeURIComponent(t.task_id)}/budget`;
  const note = h("textarea", { id: "resume-note", placeholder: "What you decided (the coder sees it)" });
  // one id per drawn set of buttons: a double-click sends the same action twice, and the server runs it once
  const actionId = newActionId();
  // the buttons are disabled from the first click until the answer (a redraw meanwhile too)
  const post = async (what, body) => {
    await oneAtATime(base, holdButtons, async () => {
      try {
        const res = await api("POST", `${base}/${what}`, { ...body, action_id: actionId });
        const run = res.run ? ` Started graphlemon resume (process ${res.run.ref}); the graph follows it.` : "";
        const told = res.message ? `${res.message}.` : res.task ? `The task is ${said(res.task.status, "status")}.` : "";
        message(msg, null, what === "resume" ? `Resumed.${run}` : what === "run" ? run.trim() : told);
        if (res.outcome === "stopping") msg.dataset.until = what; // said until the run is gone (drawActs)
      } catch (err) { message(msg, err); }
    });
    if (window.glRefreshRun) window.glRefreshRun();
  };
  const holdButtons = (on) => document.querySelectorAll("#actions button").forEach((b) => { b.disabled = on; });
  const evidence = d.escalation && t.status === "blocked_pending_human" && !resuming(t, d.run) ? h("div", { id: "evidence" },
    h("h2", { title: d.escalation.blocked_reason }, `Evidence pack: ${said(d.escalation.blocked_reason, "reason")}`),
    renderedHtml(d.escalation.summary_html, pid),
    d.escalation.open_bug_ids.length ? h("p", {}, "open bugs: ", d.escalation.open_bug_ids.map((b) => bugLink(pid, b)).flatMap((a, i) => (i ? [", ", a] : [a]))) : null) : null;
  const open = allowed.has("resume") || allowed.has("run");
  // the main action (yellow) is the one the block's reason calls for; the others are secondary (white)
  const kind = (action) => (next.action === action || (action === "resume" && next.action === "resume_note") ? "" : "secondary");
  const resumeLabel = next.action === "resume_note" ? "Resume with this note" : "Resume";
  const box = h("div", { class: open ? "card" : "card quiet", id: "actions", dataset: { open: open ? "1" : "", actions: [...allowed].join(" "), main: next.action } },
    runState(d), h("h2", {}, "What to do now"),
    next.why ? h("p", { id: "next-why" }, next.label ? h("b", {}, `${next.label}: `) : null, next.why, ".") : null,
    allowed.size ? null : h("p", { class: "muted", id: "no-actions" }, `The task is ${said(t.status, "status")}: there is nothing left to decide.`),
    allowed.has("budget") && next.action === "budget" ? h("a", { href: budgetHref, id: "budget-main", class: "button-link main" }, "Raise the budget") : null, " ",
    allowed.has("run") ? h("button", { id: "run", type: "button", class: kind("run"), onclick: () => post("run", {}) }, "Run it now") : null, " ",
    ["resume", "stop", "abandon"].some((a) => allowed.has(a)) ? [h("label", { for: "resume-note", class: "block" }, next.action === "budget" ? "Note (optional; resuming before the budget is raised blocks again)" : "Note"), note, h("br")] : null,
    allowed.has("stop") ? h("button", { id: "stop", type: "button", class: "secondary", title: "stops at the next safe point; the work done is kept", onclick: () => post("stop", { note: note.value }) }, "Stop") : null, " ",
    allowed.has("resume") ? h("button", { id: "resume", type: "button", class: kind("resume"), title: "manual_resume", onclick: () => post("resume", { note: note.value }) }, resumeLabel) : null, " ",
    allowed.has("budget") && next.action !== "budget" ? h("a", { href: budgetHref, id: "budget-action", class: "button-link" }, "Change the budget") : null, " ",
    allowed.has("abandon") ? h("button", { id: "abandon", type: "button", class: "danger", onclick: () => { if (window.confirm(`Abandon ${t.task_id}?`)) post("abandon", { note: note.value }); } }, "Abandon") : null,
    next.command && next.action !== "none" ? h("p", { class: "muted", id: "next-command" }, "On a terminal: ", h("code", {}, next.command)) : null,
    evidence); // the pack below its next step: a long pack never pushes the buttons out of sight
  if (actionsInFlight.has(base)) box.querySelectorAll("button").forEach((b) => { b.disabled = true; });
  return box;
}
// the note of the latest resume that carried one (decision_resumes: what the coder was told)
const resumeNote = (t) => (t.decision_resumes || []).filter(Boolean).slice(-1)[0] || "";
// what runs the task now: a live process, nothing (queued with no run, or its run stopped), and its last launch
function runState(d) {
  const run = d.run || {}; const launch = run.launch;
  const box = h("div", { id: "run-state", dataset: { state: run.state || "none" } });
  const held = run.lease;
  const who = held ? ` by ${held.holder}${held.pid ? ` (pid ${held.pid} on ${held.host})` : ""} since ${fmtTime(held.since)}` : "";
  if (run.state === "running") box.append(h("p", { class: "msg info", id: "run-holder" }, `A run of this task is going on${who}.`));
  else if (run.state === "stopping") box.append(h("p", { class: "msg info", id: "run-holder" }, `Stopping: ${held.stop_requested_by} asked the run${who} to stop; it stops at its next safe point and keeps its finished work.`));
  else if (run.state === "idle") box.append(h("p", { class: "msg error" }, "The task is queued, and no run picks it up. Run it now to continue."));
  else if (run.state === "interrupted") box.append(h("p", { class: "msg error" }, `The task is ${d.task.status}, but nothing is running it: its run stopped. Run it now to continue where it stopped.`));
  if (launch && launch.state === "failed" && run.state !== "running" && run.state !== "stopping") {
    box.append(h("div", { class: "msg error", id: "launch-failed" }, `The last run the console started failed (exit code ${launch.returncode ?? "unknown"}):`,
      h("pre", { class: "launch-tail" }, launch.log_tail || "(no output)")));
  }
  return box;
}
// text with every bug id in it linked to the bug's page
const withBugLinks = (pid, text) => String(text).split(/(bug-\d{8}-\d{4}-[0-9a-f]{4,})/).filter(Boolean)
  .map((part) => (/^bug-\d{8}-\d{4}-[0-9a-f]{4,}$/.test(part) ? bugLink(pid, part) : part));
const bugLink = (pid, id) => h("a", { href: `#/p/${encodeURIComponent(pid)}/bugs/${encodeURIComponent(id)}`, class: "bug-link", dataset: { bug: id } }, id);

function timelineLog(pid, d, e) { // a timeline line opens the log of its node (its ref, else the unit's latest node)
  const pidq = encodeURIComponent(pid);
  // the node that was running then: the latest one of the line's unit (or of no unit) started at or before it
  const own = (d.nodes || []).filter((n) => e.unit_id ? n.unit_id === e.unit_id : !n.unit_id)
    .sort((a, b) => String(a.started_at).localeCompare(String(b.started_at)));
  const before = own.filter((n) => new Date(n.started_at) <= new Date(e.ts));
  const pick = before.length ? before[before.length - 1] : own[0];
  const nid = e.ref && String(e.ref).startsWith("ne-") ? e.ref : (pick ? pick.node_exec_id : null);
  return nid ? h("a", { href: `#/p/${pidq}/logs/${encodeURIComponent(nid)}`, class: "log-link", dataset: { node: nid } }, "log")
    : h("a", { href: `#/p/${pidq}/t/${encodeURIComponent(d.task.task_id)}/logs`, class: "log-link" }, "logs");
}
// a task with refused actions never reads as a clean "done": the count beside its status, everywhere
const refusedBadge = (n) => (n ? h("span", { class: "refused-badge", dataset: { refused: String(n) } }, ` — with ${n} refused action${n > 1 ? "s" : ""}`) : null);
// every refused action of the task (the sandbox undid or refused each), as text
function refusedList(pid, d) {
  const v = d.violations;
  if (!v || !v.count) return null;
  const stages = Object.entries(v.by_stage).map(([stage, n]) => `${stage} ${n}`).join(", ");
  return h("div", { class: "card", id: "refused" }, h("h2", {}, `Refused actions: ${v.count} `, h("span", { class: "muted" }, `(${stages})`)),
    h("p", { class: "muted" }, "What an agent or a run tried and the sandbox undid or refused; the task's result does not include it."),
    h("table", { id: "refused-actions" }, h("tr", {}, ["time", "stage", "unit", "refused", ""].map((c) => h("th", {}, c))),
      v.actions.map((a, i) => h("tr", { dataset: { stage: a.stage } }, timeCell(a.ts, i ? v.actions[i - 1].ts : null), h("td", {}, a.stage), h("td", {}, a.unit_id || ""),
        h("td", {}, a.shown), h("td", {}, h("a", { href: `#/p/${encodeURIComponent(pid)}/logs/${encodeURIComponent(a.node_exec_id)}`, class: "log-link" }, "log"))))));
}
function drawRest(rest, pid, d) {
  const tl = h("table", { id: "timeline" }, h("tr", {}, ["time", "event", "unit", "summary", ""].map((c) => h("th", {}, c))),
    d.timeline.map((e, i) => h("tr", { dataset: { event: e.event } }, timeCell(e.ts, i ? d.timeline[i - 1].ts : null), h("td", { title: e.event }, said(e.event, "event")), h("td", {}, e.unit_id || ""), h("td", { class: "prose" }, withBugLinks(pid, e.said ?? e.summary)), h("td", {}, timelineLog(pid, d, e)))));
  const bugs = d.bugs.length ? h("table", { id: "bugs" }, h("tr", {}, ["bug", "unit", "status", "root cause", "route", "title"].map((c) => h("th", {}, c))),
    d.bugs.map((b) => h("tr", { dataset: { bug: b.bug_id } }, h("td", { class: "id" }, bugLink(pid, b.bug_id)), h("td", {}, b.unit_id || ""), h("td", { class: "id" }, pill(b.status)),
      h("td", { class: "prose" }, b.root_cause_category ? said(b.root_cause_category, "category") : h("span", { class: "muted", title: b.category }, said(b.category, "category")),
        b.root_cause_detail ? h("div", { class: "muted" }, b.root_cause_detail) : null),
      h("td", {}, said(b.suggested_route, "route")), h("td", { class: "prose" }, b.title)))) : h("p", { class: "muted" }, "No bugs.");
  const arts = d.artifacts.length ? h("ul", { id: "artifacts" }, d.artifacts.map((a) => h("li", {}, // each at its own URL
    h("a", { href: `#/p/${encodeURIComponent(pid)}/artifacts/${encodeURIComponent(a.artifact_id)}`, class: "artifact-link", dataset: { artifact: a.artifact_id, type: a.artifact_type } },
      `${a.artifact_type} v${a.version}${a.unit_id ? ` (${a.unit_id})` : ""}`), a.title ? ` — ${a.title}` : "", " ", h("span", { class: "muted small" }, fmtWhen(a.ts))))) : h("p", { class: "muted" }, "No artifacts.");
  const usage = h("table", { id: "usage" }, h("tr", {}, ["role", "calls", "tokens", "cost"].map((c) => h("th", {}, c))),
    Object.entries(d.usage.by_role).map(([role, u]) => h("tr", {}, h("td", {}, role), h("td", {}, String(u.calls)), h("td", {}, u.tokens.toLocaleString()), h("td", {}, `$${u.cost_usd.toFixed(4)}`))));
  rest.replaceChildren(
    ...[refusedList(pid, d)].filter(Boolean),
    h("h2", {}, "Bugs"), h("div", { class: "scroll-x", id: "bugs-wrap" }, bugs), // the page's width: a title is never clipped
    h("div", { class: "grid2 task-rest" },
      h("div", {}, h("h2", {}, "Timeline"),
        d.timeline_total > d.timeline.length ? h("p", { class: "muted", id: "timeline-more" }, `the latest ${d.timeline.length} of ${d.timeline_total} milestones (graphlemon status ${d.task.task_id} shows all)`) : null, tl),
      h("div", {}, h("h2", {}, "Usage"), usage,
        h("p", { class: "muted", id: "usage-executor" }, `executor: ${d.usage.executors.join(", ") || ((d.params || {}).executor ? `${d.params.executor} (no model call recorded)` : "none")}`),
        h("h2", {}, "Artifacts"), arts)),
    h("h2", {}, "When each node ran"), gantt(pid, d));
}

// -- the graph: planner -> each unit's coder <-> tester -> integrator -> bug-triager -> validator, per round --
const NODE_W = 170, NODE_H = 48, COL_W = 215, ROW_H = 64, LANE_PAD = 26, LEFT = 80;
function nodeLabel(n, hasTester) {
  const stage = n.stage === "coder" && !hasTester ? "coder ⇄ tester" : n.stage;
  const shown = n.shown || n.status;
  const second = shown === "pending" ? "pending (declared by the plan)" : shown === "sent_back" ? "done · sent the round back"
    : `attempt ${n.attempt} · ${said(shown, "node")}`;
  return [n.unit_id ? `${stage} · ${n.unit_id}` : stage, second];
}
const LIVE_NODE = new Set(["running", "verifying", "reflecting", "retrying", "waiting_for_quota"]);
// when the last run let go of the task, from its lease: released (ended), or its holder gone (its last heartbeat)
const lastRunSaid = (last) => (!last ? ["no run yet"] : last.how === "ended" ? ["no run since ", fmtWhen(last.at)]
  : ["no run; the last one ended without letting go (its last heartbeat ", fmtWhen(last.at), ")"]);
// nothing runs the task (its lease has no live holder): a node it left live is not going on, whatever its record says
const noRun = (d) => Boolean(d && d.run && (d.run.state === "idle" || d.run.state === "interrupted"));
// what a node shows: a live node of a task that stopped is blocked (or cancelled); a validator whose round was
// followed by another sent it back (not "done"); units the plan declared but not started are pending
function shownStatus(n, d, every) {
  if (n.pending) return "pending";
  const task = d && d.task ? d.task.status : null;
  if (LIVE_NODE.has(n.status) && BLOCKED_TASK.has(task) && !resuming(d.task, d.run)) return "blocked";
  if (LIVE_NODE.has(n.status) && (task === "abandoned" || task === "done")) return "cancelled";
  if (LIVE_NODE.has(n.status) && noRun(d)) return "stopped"; // queued or interrupted: no run holds the task's lease
  if (n.stage === "validator" && n.status === "done" && (task !== "done" || every.some((m) => !m.pending && (m.loop_round || 0) > (n.loop_round || 0)))) return "sent_back";
  return n.status;
}
// a Gantt-like strip: one bar per node execution from its start to its end (or now), on one time axis; hover: the times
function gantt(pid, d) {
  const nodes = (d.nodes || []).filter((n) => n.started_at).sort((a, b) => String(a.started_at).localeCompare(String(b.started_at)));
  if (!nodes.length) return h("p", { class: "muted", id: "gantt" }, "No node has run yet.");
  const t0 = new Date(d.times && d.times.started ? d.times.started : nodes[0].started_at).getTime();
  // a node still marked live on a task that has stopped (blocked, paused, ended) stopped with the task, not now
  const stopped = d.times && d.times.ended && !resuming(d.task, d.run) ? d.times.ended : null;
  const idle = noRun(d); // a live node of a task no run holds ends at its last change (it does not grow)
  const endOf = (n) => new Date(n.ended_at || (LIVE_NODE.has(n.status) ? stopped || (idle ? n.updated_at : new Date().toISOString()) : n.updated_at)).getTime();
  const t1 = Math.max(...nodes.map(endOf), stopped ? new Date(stopped).getTime() : 0, t0 + 1000);
  const W = 640, LABEL = 230, ROW = 16, span = t1 - t0;
  const svg = s("svg", { class: "gantt", id: "gantt", width: LABEL + W + 90, height: nodes.length * ROW + 24 });
  nodes.forEach((n, i) => {
    const a = new Date(n.started_at).getTime(), b = endOf(n);
    const ran = Math.max(0, (b - a) / 1000 - (n.waited_s || 0)); // a wait for a person, resumed in this node, is not running
    const took = `${fmtDuration(ran)}${n.waited_s ? ` running, ${fmtDuration(n.waited_s)} waiting for a person` : ""}`;
    const x = LABEL + ((a - t0) / span) * W, w = Math.max(2, ((b - a) / span) * W), y = i * ROW + 4;
    const label = `${n.stage}${n.unit_id ? ` · ${n.unit_id}` : ""} · r${n.loop_round}`;
    const g = s("g", { class: "bar", "data-node-id": n.node_exec_id, "data-status": n.shown || shownStatus(n, d, nodes) },
      s("title", {}, `${label}: ${fmtDateTime(n.started_at)} → ${n.ended_at ? fmtDateTime(n.ended_at) : stopped && LIVE_NODE.has(n.status) ? `${fmtDateTime(stopped)} (stopped with the task)` : idle && LIVE_NODE.has(n.status) ? `${fmtDateTime(n.updated_at)} (stopped: no run holds the task)` : "going on"} (${took})`),
      s("text", { x: 4, y: y + 11 }, label), s("rect", { x, y, width: w, height: ROW - 4, rx: 2 }),
      s("text", { x: x + w + 4, y: y + 11, class: "dur" }, fmtDuration(ran)));
    g.addEventListener("click", () => { location.hash = `#/p/${encodeURIComponent(pid)}/logs/${encodeURIComponent(n.node_exec_id)}`; });
    svg.append(g);
  });
  svg.append(s("text", { x: LABEL, y: nodes.length * ROW + 18, class: "axis" }, fmtTime(new Date(t0).toISOString())),
    s("text", { x: LABEL + W, y: nodes.length * ROW + 18, class: "axis", "text-anchor": "end" }, `${fmtTime(new Date(t1).toISOString())} (+${fmtDuration(span / 1000)})`));
  return h("div", { class: "graph-wrap" }, svg);
}
const ROUNDS_SHOWN = 12; // a long task opens on its latest rounds; the button shows them all
function drawGraph(wrap, nodes, detail) {
  const pending = ((detail && detail.pending_units) || []).map((u) => ({ node_exec_id: `pending-${u.unit_id}-r${u.loop_round}`,
    stage: "coder", unit_id: u.unit_id, loop_round: u.loop_round, attempt: 0, status: "pending", pending: true, failures: [] }));
  const every = [...nodes.values(), ...pending];
  for (const n of every) n.shown = shownStatus(n, detail, every);
  wrap.glDetail = detail;
  const hasTester = every.some((n) => n.stage === "tester");
  const cols = STAGE_COLUMNS.filter((st) => st !== "tester" || hasTester);
  const allRounds = [...new Set(every.map((n) => n.loop_round || 0))].sort((a, b) => a - b);
  const rounds = wrap.dataset.allRounds === "1" ? allRounds : allRounds.slice(-ROUNDS_SHOWN);
  const shown = new Set(rounds);
  const all = every.filter((n) => shown.has(n.loop_round || 0));
  const svg = s("svg", { class: "graph", id: "graph-svg" });
  const pos = new Map(); let y = 12; const lanes = [];
  for (const r of rounds) {
    const inRound = all.filter((n) => (n.loop_round || 0) === r);
    let rows = 1; const byCol = cols.map((st) => inRound.filter((n) => n.stage === st).sort((a, b) => String(a.unit_id).localeCompare(String(b.unit_id))));
    byCol.forEach((list) => { rows = Math.max(rows, list.length); });
    byCol.forEach((list, ci) => list.forEach((n, i) => {
      const off = (rows - list.length) * ROW_H / 2;
      pos.set(n.node_exec_id, { x: LEFT + ci * COL_W, y: y + LANE_PAD + off + i * ROW_H, n });
    }));
    lanes.push({ r, y, height: rows * ROW_H + LANE_PAD, byCol });
    y += rows * ROW_H + LANE_PAD + 14;
  }
  const edges = s("g", {}); const boxes = s("g", {});
  let prevLast = null;
  for (const lane of lanes) {
    boxes.append(s("text", { class: "round", x: 8, y: lane.y + 16 }, `round ${lane.r}`));
    if (lane.r !== rounds[0]) edges.append(s("line", { class: "lane", x1: 0, x2: LEFT + cols.length * COL_W, y1: lane.y - 7, y2: lane.y - 7 }));
    const filled = lane.byCol.filter((l) => l.length);
    for (let i = 0; i + 1 < filled.length; i++) {
      for (const a of filled[i]) for (const b of filled[i + 1]) {
        if (filled[i].length > 1 && filled[i + 1].length > 1 && a.unit_id !== b.unit_id) continue;
        edges.append(arrow(pos.get(a.node_exec_id), pos.get(b.node_exec_id)));
        if (a.stage === "coder" && b.stage === "tester") edges.append(arrow(pos.get(b.node_exec_id), pos.get(a.node_exec_id), true));
      }
    }
    if (prevLast && filled.length) { // the loop goes back: last stage of one round -> first of the next
      for (const a of prevLast) for (const b of filled[0]) edges.append(loopback(pos.get(a.node_exec_id), pos.get(b.node_exec_id)));
    }
    if (filled.length) prevLast = filled[filled.length - 1];
  }
  for (const p of pos.values()) boxes.append(nodeBox(p, hasTester));
  svg.append(edges, boxes);
  svg.setAttribute("width", LEFT + cols.length * COL_W + 20);
  svg.setAttribute("height", Math.max(y, 80));
  const hidden = allRounds.length - rounds.length;
  const more = hidden > 0 ? h("p", { class: "muted pad", id: "graph-more" }, `${hidden} earlier round(s) not drawn `,
    h("button", { type: "button", class: "secondary", onclick: () => { wrap.dataset.allRounds = "1"; drawGraph(wrap, nodes, detail); } }, "show all rounds")) : null;
  if (!every.length) wrap.replaceChildren(h("p", { class: "muted pad" }, "No node has run yet."));
  else wrap.replaceChildren(...[more, svg].filter(Boolean));
}
function nodeBox(p, hasTester) {
  const [l1, l2] = nodeLabel(p.n, hasTester);
  const fails = p.n.failures || [];
  const g = s("g", { class: p.n.pending ? "node pending" : "node", "data-node-id": p.n.node_exec_id, "data-status": p.n.shown || p.n.status,
    "data-recorded-status": p.n.status, "data-stage": p.n.stage, "data-failures": fails.length, transform: `translate(${p.x},${p.y})` },
    s("title", {}, p.n.pending ? "declared by the plan, not started yet" : "open this node's execution log"),
    s("rect", { width: NODE_W, height: NODE_H, rx: 6 }),
    s("text", { x: 8, y: 19, class: "l1" }, l1), s("text", { x: 8, y: 36, class: "l2" }, l2));
  fails.forEach((f, i) => g.append(s("g", { class: "fail-mark", "data-attempt": f.attempt },
    s("title", {}, `attempt ${f.attempt} failed${f.error_code ? ` (${f.error_code})` : ""}: ${f.error}`),
    s("rect", { x: NODE_W - 14 - i * 13, y: 4, width: 10, height: 10, rx: 2 }))));
  g.dataset.hasTester = hasTester ? "1" : "";
  if (!p.n.pending) g.addEventListener("click", () => { location.hash = `#/p/${encodeURIComponent(currentPid())}/logs/${encodeURIComponent(p.n.node_exec_id)}`; });
  return g;
}
function recolour(wrap, n) {
  const g = [...wrap.querySelectorAll("g.node")].find((el) => el.getAttribute("data-node-id") === n.node_exec_id);
  if (!g) return;
  n.shown = shownStatus(n, wrap.glDetail, []);
  g.setAttribute("data-status", n.shown);
  g.setAttribute("data-recorded-status", n.status);
  g.querySelector("text.l2").textContent = nodeLabel(n, g.dataset.hasTester === "1")[1];
}
function arrow(a, b, back) {
  const dy = back ? 8 : -8;
  return s("line", { x1: back ? a.x : a.x + NODE_W, y1: a.y + NODE_H / 2 + dy, x2: back ? b.x + NODE_W : b.x, y2: b.y + NODE_H / 2 + dy });
}
function loopback(a, b) {
  const x1 = a.x + NODE_W / 2, y1 = a.y + NODE_H, x2 = b.x + NODE_W / 2, y2 = b.y;
  return s("path", { class: "loopback", d: `M${x1},${y1} C${x1},${y1 + 40} ${x2},${y2 - 40} ${x2},${y2}` });
}

// -- v_goal_composer -------------------------------------------------------------------------------------
function pageGoal(pid) {
  const goal = h("textarea", { id: "goal-text", placeholder: "Implement a snake game" });
  const executor = h("select", { id: "goal-executor" }, EXECUTORS.map((e) => h("option", { value: e }, e)));
  const playbook = h("input", { type: "text", id: "goal-playbook", placeholder: "/abs/path/playbook.yaml (scripted executor)" });
  const engine = h("select", { id: "goal-engine" }, h("option", { value: "prefect" }, "prefect (a flow run)"), h("option", { value: "direct" }, "direct (no Prefect)"));
  const budget = h("input", { type: "number", id: "goal-budget", min: "1", step: "1", placeholder: "no limit" });
  const msg = h("div", { id: "goal-msg", hidden: true });
  const pbRow = h("div", {}, h("label", { for: "goal-playbook" }, "Playbook"), playbook);
  executor.addEventListener("change", () => { pbRow.hidden = executor.value !== "scripted"; });
  const form = h("form", { class: "stack card", id: "goal-form" },
    h("label", { for: "goal-text" }, "Goal"), goal, h("label", { for: "goal-executor" }, "Executor"), executor, pbRow,
    h("label", { for: "goal-engine" }, "Engine (local run)"), engine,
    h("label", { for: "goal-budget" }, "Budget (tokens, optional)"), budget, h("br"), h("button", { type: "submit", id: "goal-start" }, "Start"), msg);
  let actionId = newActionId(); // one goal per id: a new one once a goal started
  const holdStart = (on) => { form.querySelector("#goal-start").disabled = on; };
  form.addEventListener("submit", (e) => { e.preventDefault(); oneAtATime(`goal ${pid}`, holdStart, startGoal); });
  const startGoal = async () => {
    const body = { goal: goal.value, executor: executor.value, playbook: executor.value === "scripted" ? playbook.value : null, engine: engine.value,
      budget_tokens: budget.value.trim() ? Number(budget.value) : null, action_id: actionId };
    try {
      const res = await api("POST", `/api/projects/${encodeURIComponent(pid)}/goals`, body);
      actionId = newActionId();
      if (res.mode === "deployment") { message(msg, null, `Started the devloop deployment: flow run ${res.ref}`); return; }
      message(msg, null, `Started graphlemon run (process ${res.ref}; log .graphlemon/${res.log}).`);
      msg.append(" ", h("a", { href: `#/p/${encodeURIComponent(pid)}`, id: "to-dashboard" }, "Dashboard →"));
      followLaunch(pid, res.launch_id, launchBox);
    } catch (err) {
      message(msg, err);
      if (err.error && err.error.fix === "first_commit") {
        msg.append(h("div", {}, h("button", { type: "button", id: "first-commit", onclick: async () => {
          if (!window.confirm("Commit every file the folder holds now, as the repository's first commit?")) return;
          try { const c = await api("POST", `/api/projects/${encodeURIComponent(pid)}/first-commit`, {}); message(msg, null, `First commit ${c.commit.slice(0, 10)} made: start the goal again.`); }
          catch (e2) { message(msg, e2); }
        } }, "Make a first commit of the folder")));
      }
    }
  };
  const launchBox = h("div", { id: "launch" });
  main().replaceChildren(h("h1", {}, "New goal"), form, launchBox);
}

// a process the console started: running (its task, once created), ended, or failed with its output's tail
function followLaunch(pid, launchId, box) {
  const pidq = encodeURIComponent(pid);
  const tick = async () => {
    if (!box.isConnected) return;
    try {
      const l = await api("GET", `/api/projects/${pidq}/launches/${encodeURIComponent(launchId)}`);
      const task = l.task_id ? h("a", { href: `#/p/${pidq}/t/${encodeURIComponent(l.task_id)}`, id: "launch-task" }, l.task_id) : "not created yet";
      box.dataset.state = l.state;
      if (l.state === "failed") {
        box.replaceChildren(h("div", { class: "msg error", id: "launch-failed" }, `The run failed (exit code ${l.returncode ?? "unknown"}; task: `, task, "):",
          h("pre", { class: "launch-tail" }, l.log_tail || "(no output)")));
        return;
      }
      box.replaceChildren(h("p", { class: l.state === "running" ? "msg info" : "msg ok" }, l.state === "running" ? "Running; its task: " : "The run ended; its task: ", task));
      if (l.state === "running") setTimeout(tick, 1500);
    } catch (err) { message(box, err); }
  };
  tick();
}

// -- v_bug_feedback ----------------------------------------------------------------------------------------
function pageBug(pid) {
  const title = h("input", { type: "text", id: "bug-title", maxlength: 200 });
  const desc = h("textarea", { id: "bug-description", required: true });
  const unit = h("select", { id: "bug-unit" }, h("option", { value: "" }, "(no unit / not sure)"));
  const sev = h("select", { id: "bug-severity" }, SEVERITIES.map((v) => h("option", { value: v, selected: v === "medium" }, v)));
  const msg = h("div", { id: "bug-msg", hidden: true });
  const form = h("form", { class: "stack card", id: "bug-form" },
    h("label", { for: "bug-title" }, "Title"), title, h("label", { for: "bug-description" }, "What you saw and what you expected"), desc,
    h("label", { for: "bug-unit" }, "Unit"), unit, h("label", { for: "bug-severity" }, "Severity"), sev, h("br"),
    h("button", { type: "submit" }, "Report bug"), msg);
  api("GET", `/api/projects/${encodeURIComponent(pid)}/bugs`).then((r) => { // the units the plan declared (and bugs named)
    unit.append(...r.units.map((u) => h("option", { value: u }, u)));
  }).catch((err) => message(msg, err));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!desc.value.trim()) { // the page refuses; the server refuses too (INVALID_PARAM), independently
      message(msg, { message: "error[INVALID_PARAM]: the description is empty; describe what you saw and what you expected", error: { code: "INVALID_PARAM" } });
      return;
    }
    try {
      const res = await api("POST", `/api/projects/${encodeURIComponent(pid)}/bugs`, { title: title.value, description: desc.value, unit_id: unit.value || null, severity: sev.value });
      message(msg, null, "Reported "); msg.append(bugLink(pid, res.bug_id), " — ", h("a", { href: `#/p/${encodeURIComponent(pid)}/bugs` }, "all bugs"));
      form.reset();
    } catch (err) { message(msg, err); }
  });
  main().replaceChildren(h("h1", {}, "Report a bug"), form);
}

// -- the bugs of a project: filter by status, unit and category (the validator's attribution when it made one) ----
async function pageBugs(pid, query) {
  const pidq = encodeURIComponent(pid);
  const box = h("div", { id: "bugs-list" }, "Loading…");
  const pick = (id, label, values, word = (v) => v) => h("label", { class: "filter" }, `${label} `, h("select", { id, dataset: { field: label } },
    h("option", { value: "" }, "all"), values.map((v) => h("option", { value: v, title: v, selected: query.get(label) === v }, word(v)))));
  main().replaceChildren(h("h1", {}, "Bugs ", h("a", { href: `#/p/${pidq}/bug`, class: "button-link small" }, "report a bug")), box);
  let data;
  try { data = await api("GET", `/api/projects/${pidq}/bugs`); } catch (err) { message(box, err); return; }
  const uniq = (f) => [...new Set(data.bugs.map(f).filter(Boolean))].sort();
  const filters = h("div", { class: "filters card", id: "bug-filters" },
    pick("filter-status", "status", uniq((b) => b.status)), pick("filter-unit", "unit", data.units),
    pick("filter-category", "category", uniq((b) => b.shown_category), (v) => said(v, "category")));  // the rows' words
  const table = h("div", {});
  const draw = () => {
    const want = Object.fromEntries([...filters.querySelectorAll("select")].map((el) => [el.dataset.field, el.value]));
    const shown = data.bugs.filter((b) => (!want.status || b.status === want.status) && (!want.unit || b.unit_id === want.unit)
      && (!want.category || b.shown_category === want.category));
    const qs = new URLSearchParams(Object.entries(want).filter(([, v]) => v)).toString();
    history.replaceState(null, "", `#/p/${pidq}/bugs${qs ? `?${qs}` : ""}`); // a filtered list can be linked
    table.replaceChildren(h("p", { class: "muted", id: "bugs-count" }, `${shown.length} of ${data.bugs.length} bug(s)`),
      shown.length ? h("table", { id: "bugs-table" }, h("tr", {}, ["bug", "status", "unit", "category", "severity", "task", "title", "opened"].map((c) => h("th", {}, c))),
        shown.map((b) => h("tr", { dataset: { bug: b.bug_id } }, h("td", {}, bugLink(pid, b.bug_id)), h("td", {}, pill(b.status)), h("td", {}, b.unit_id || ""),
          h("td", { title: b.shown_category }, said(b.shown_category, "category")), h("td", {}, b.severity),
          h("td", {}, b.task_id ? h("a", { href: `#/p/${pidq}/t/${encodeURIComponent(b.task_id)}` }, b.task_id) : ""),
          h("td", { class: "prose" }, b.title), h("td", { class: "time" }, fmtWhen(b.opened_at))))) : null);
  };
  filters.addEventListener("change", draw);
  box.replaceChildren(filters, table);
  draw();
}
async function pageBugDetail(pid, bid) {
  const pidq = encodeURIComponent(pid);
  const box = h("div", { id: "bug-detail", class: "card" }, "Loading…");
  main().replaceChildren(h("h1", {}, "Bug ", h("code", {}, bid)), box);
  try {
    const b = await api("GET", `/api/projects/${pidq}/bugs/${encodeURIComponent(bid)}`);
    put(box,
      h("p", {}, pill(b.status), " ", h("b", {}, b.title)),
      h("div", { class: "kv" },
        h("b", {}, "unit"), h("span", {}, b.unit_id || "—"), h("b", {}, "category"), h("span", { title: b.shown_category }, said(b.shown_category, "category")),
        h("b", {}, "severity"), h("span", {}, b.severity), h("b", {}, "source"), h("span", {}, b.source || "—"),
        h("b", {}, "task"), b.task_id ? h("a", { href: `#/p/${pidq}/t/${encodeURIComponent(b.task_id)}` }, b.task_id) : h("span", {}, "—"),
        h("b", {}, "test"), h("span", {}, b.test_name || "—"),
        h("b", {}, "root cause"), h("span", {}, b.root_cause_detail || "—"), h("b", {}, "route"), h("span", {}, b.suggested_route || "—")),
      b.detail ? h("pre", { id: "bug-text" }, b.detail) : null,
      h("h2", {}, "History"), h("ol", { id: "bug-history" }, b.history.map((e) => h("li", {}, fmtWhen(e.ts), " · ", pill(e.status || "update"),
        ` by ${e.by || "system"}`, e.note ? ` — ${e.note}` : ""))));
  } catch (err) { message(box, err); }
}

// -- v_skill_audit_log: every skill iteration (graphlemon skills log), one iteration (graphlemon skills show) -----
async function pageSkills(pid) {
  const box = h("div", { id: "skills", class: "card" }, "Loading…");
  main().replaceChildren(h("h1", {}, "Skill iterations"), box);
  try {
    const { iterations } = await api("GET", `/api/projects/${encodeURIComponent(pid)}/skills`);
    if (!iterations.length) { box.replaceChildren(h("p", { class: "muted" }, "No skill iteration yet: every role runs its seeded skill.")); return; }
    box.replaceChildren(h("table", { id: "skills-log" },
      h("tr", {}, ["iteration", "skill", "status", "bug", "author", "commit", "change", "gate"].map((c) => h("th", {}, c))),
      iterations.map((it) => h("tr", { dataset: { iteration: it.iteration_id } },
        h("td", {}, h("a", { href: `#/p/${encodeURIComponent(pid)}/skills/${encodeURIComponent(it.iteration_id)}` }, it.iteration_id)),
        h("td", {}, it.skill), h("td", {}, pill(it.status)), h("td", {}, it.triggered_by_bug_id ? bugLink(pid, it.triggered_by_bug_id) : ""), h("td", {}, it.author),
        h("td", {}, (it.commit || "").slice(0, 10)), h("td", {}, it.diff_stat),
        h("td", {}, it.gate ? (it.gate.ok ? "passed" : "failed") : "")))));
  } catch (err) { message(box, err); }
}

async function pageSkillIteration(pid, iid) {
  const box = h("div", { id: "skill-iteration", class: "card" }, "Loading…");
  main().replaceChildren(h("h1", {}, `Skill iteration ${iid}`), box);
  try {
    const d = await api("GET", `/api/projects/${encodeURIComponent(pid)}/skills/${encodeURIComponent(iid)}`);
    const it = d.iteration;
    put(box,
      h("p", {}, pill(it.status), " ", h("b", {}, it.skill), ` by ${it.author}, commit ${(it.commit || "").slice(0, 10)} (parent ${(it.parent_commit || "").slice(0, 10)})`),
      h("p", {}, h("b", {}, "bug "), it.triggered_by_bug_id ? bugLink(pid, it.triggered_by_bug_id) : "—", d.bug_title ? ` — ${d.bug_title}` : "", d.bug_status ? ` (${d.bug_status})` : ""),
      d.root_cause_detail ? h("p", {}, h("b", {}, "root cause "), d.root_cause_detail) : null,
      h("h2", {}, "Rationale"), h("p", { id: "skill-rationale" }, withBugLinks(pid, it.rationale || "—")),
      h("h2", {}, "Gate"), h("pre", { id: "skill-gate" }, it.gate ? JSON.stringify(it.gate, null, 2) : "not gated"),
      h("h2", {}, "Diff"), d.diff ? h("div", { id: "skill-diff" }, renderDiff(d.diff_lines || [], pid)) : h("p", { class: "muted", id: "skill-diff" }, "(no diff)"),
      h("h2", {}, "History"), h("ul", {}, (it.history || []).map((line) => h("li", {}, line))));
  } catch (err) { message(box, err); }
}

// -- the deploy supervisor (REQ-15): one deployment's state machine, its signals and its timeline -------------
async function pageDeploy(pid, did) {
  const box = h("div", { id: "deploy" }, h("p", { class: "muted" }, "Loading…"));
  main().replaceChildren(h("h1", {}, "Deployments of GraphLemon"), box);
  try {
    const base = `/api/projects/${encodeURIComponent(pid)}/deployments`;
    const d = await api("GET", did ? `${base}/${encodeURIComponent(did)}` : base);
    const live = d.live ? h("p", { id: "deploy-live" }, "live: ", h("b", {}, d.live.commit.slice(0, 12)),
      ` on 127.0.0.1:${d.live.port} (PID ${d.live.pid})`, d.live.public_port ? `, public 127.0.0.1:${d.live.public_port}` : "")
      : h("p", { class: "muted" }, "No live instance recorded.");
    if (!d.deployment) { box.replaceChildren(live, h("p", { class: "muted" }, "No deployment yet: `graphlemon deploy stage COMMIT`.")); return; }
    const dep = d.deployment;
    const alert = dep.what_to_do ? h("div", { id: "deploy-alert", class: "msg error", dataset: { reason: dep.blocked_reason || "" } },
      h("b", {}, "Automatic recovery failed — not a code review. "), dep.what_to_do) : null;
    box.replaceChildren(
      live,
      h("div", { class: "card" },
        h("p", {}, h("b", {}, dep.deployment_id), " of commit ", h("code", {}, (dep.commit || "").slice(0, 12)), " ", pill(dep.status),
          dep.previous_commit ? ` (previous ${dep.previous_commit.slice(0, 12)})` : ""),
        dep.task_id ? h("p", { id: "deploy-task" }, "The merge of DevLoop task ",
          h("a", { href: `#/p/${encodeURIComponent(pid)}/t/${encodeURIComponent(dep.task_id)}` }, dep.task_id),
          ", deployed with no person (GraphLemon's own repository).") : null,
        alert,
        h("h2", {}, "State machine"), machine(d.machine, dep)),
      h("div", { class: "grid2" },
        h("div", { class: "card" }, h("h2", {}, "Signals"), signalsTable(dep.signals)),
        h("div", { class: "card" }, h("h2", {}, "Timeline"), h("ol", { id: "deploy-timeline" }, dep.timeline.map((e) =>
          h("li", { dataset: { status: e.status } }, h("span", { class: "muted" }, fmtTime(e.ts)), " ", pill(e.status),
            ` ${e.by}`, e.duration_ms !== null && e.duration_ms !== undefined ? ` · ${e.duration_ms} ms` : "",
            e.note ? h("div", { class: "note" }, e.note) : null))))),
      h("h2", {}, "All deployments"),
      h("table", { id: "deploy-list" }, h("tr", {}, ["deployment", "commit", "status", "started"].map((c) => h("th", {}, c))),
        d.deployments.map((x) => h("tr", {}, h("td", {}, h("a", { href: `#/p/${encodeURIComponent(pid)}/deploy/${encodeURIComponent(x.deployment_id)}` }, x.deployment_id)),
          h("td", {}, (x.commit || "").slice(0, 12)), h("td", {}, pill(x.status)), h("td", {}, fmtTime(x.started_at))))));
  } catch (err) { message(box, err); }
}
function machine(m, dep) {
  const visited = new Set(dep.visited);
  const state = (name) => h("div", { class: "state", dataset: { state: name, visited: visited.has(name) ? "yes" : "no",
    current: dep.status === name ? "yes" : "no" }, title: m.notes[name] || "" }, name);
  const row = (names, label) => h("div", { class: "machine-row" }, h("span", { class: "machine-label" }, label),
    names.flatMap((n, i) => (i ? [h("span", { class: "arrow" }, "→"), state(n)] : [state(n)])));
  return h("div", { id: "deploy-machine" },
    row(m.happy, "blue-green"),
    row(["health_check_failed", "rolled_back"], "path A"),
    row(["anomaly_detected", "rolled_back"], "path B"),
    row(["anomaly_detected", "rollback_failed", "blocked_pending_human"], "rollback fails"));
}
function signalsTable(signals) {
  if (!signals.length) return h("p", { class: "muted" }, "No signal read yet.");
  return h("table", { id: "deploy-signals" },
    h("tr", {}, ["phase", "signal", "last", "value", "baseline", "threshold", "readings", "detail"].map((c) => h("th", {}, c))),
    signals.map((x) => h("tr", { dataset: { signal: x.signal, ok: x.ok ? "yes" : "no" } },
      h("td", {}, x.phase), h("td", {}, x.signal), h("td", {}, h("span", { class: `pill ${x.ok ? "s-done" : "s-blocked_pending_human"}` }, x.ok ? "ok" : "anomaly")),
      h("td", {}, num(x.value)), h("td", {}, num(x.baseline)), h("td", {}, num(x.threshold)),
      h("td", {}, `${x.readings}${x.anomalies ? ` (${x.anomalies} bad)` : ""}`), h("td", {}, x.detail))));
}
const num = (v) => (v === null || v === undefined ? "—" : Number.isInteger(v) ? String(v) : v.toFixed(2));

// -- v_budget_settings -------------------------------------------------------------------------------------
async function pageBudget(pid, tid) {
  const pidq = encodeURIComponent(pid); const tidq = encodeURIComponent(tid);
  const info = h("div", { id: "budget-info", class: "card" }, "Loading…");
  const limit = h("input", { type: "number", id: "budget-limit", min: "0", step: "any" });
  const type = h("select", { id: "budget-type" }, h("option", { value: "token_count", title: "token_count" }, "tokens"), h("option", { value: "cost_usd", title: "cost_usd" }, "US dollars"));
  const msg = h("div", { id: "budget-msg", hidden: true });
  const form = h("form", { class: "stack card", id: "budget-form" }, h("label", { for: "budget-limit" }, "New limit"), limit,
    h("label", { for: "budget-type" }, "Type"), type, h("br"), h("button", { type: "submit" }, "Set the budget"), msg);
  const amount = (v, t) => (t === "token_count" ? `${fmtNum(v)} tokens` : `$${Number(v).toFixed(2)}`);
  const load = async () => {
    try {
      const d = await api("GET", `/api/projects/${pidq}/tasks/${tidq}`);
      const b = d.budget;
      form.hidden = !(d.actions || []).includes("budget");
      info.replaceChildren(h("div", { class: "kv" },
        h("b", {}, "task"), h("a", { href: `#/p/${pidq}/t/${tidq}`, id: "budget-task" }, tid),
        h("b", {}, "status"), h("span", { id: "budget-status" }, pill(d.task.status, d.task.blocked_reason),
          d.run && d.run.state === "running" ? (d.task.status === "queued" ? " · a run has picked it up" : " · a run holds it") : ""),
        h("b", {}, "limit"), h("span", { id: "budget-limit-now" }, b ? amount(b.limit, b.limit_type) : "none"),
        h("b", {}, "used"), h("span", {}, `${fmtNum(d.usage.tokens)} tokens · $${d.usage.cost_usd.toFixed(4)}`),
        h("b", {}, "remaining"), h("span", {}, b ? amount(b.remaining, b.limit_type) : "—"),
        h("b", {}, "changes"), d.budget_changes.length ? h("ol", { id: "budget-history", class: "plain" }, d.budget_changes.map((c) =>
          h("li", {}, fmtWhen(c.ts), ` · ${amount(c.limit_value, c.limit_type)} · by ${c.by}`))) : h("span", {}, "none")),
        ...(form.hidden ? [h("p", { class: "muted" }, `The task is ${said(d.task.status, "status")}: its budget can no longer change anything.`)] : []));
      if (b) type.value = b.limit_type;
    } catch (err) { info.replaceChildren(h("div", { class: "msg error" }, err.message)); }
  };
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const res = await api("POST", `/api/projects/${pidq}/tasks/${tidq}/budget`, { limit: Number(limit.value), limit_type: type.value });
      message(msg, null, `Budget set: ${amount(res.limit, res.limit_type)}; the task: ${said(res.task_status, "status")}.` +
        (res.run ? ` It was stopped by its budget: started graphlemon resume (process ${res.run.ref}).` : ""));
      if (res.warning) msg.append(h("div", { class: "msg info", id: "budget-warning" }, `Note: ${res.warning}.`));
      msg.append(" ", h("a", { href: `#/p/${pidq}/t/${tidq}`, id: "budget-follow" }, "Follow it on the task page →"));
      load();
    } catch (err) { message(msg, err); }
  });
  main().replaceChildren(h("h1", {}, "Budget"), info, form);
  let refetch = null; // the status and spend follow the run live
  current = new Live(pid, tid, { snapshot: () => load(), event: () => { clearTimeout(refetch); refetch = setTimeout(load, 200); },
    refused: (err) => { form.hidden = true; info.replaceChildren(h("div", { class: "msg error", id: "budget-missing", dataset: { code: err.code } }, `error[${err.code}]: ${err.message}`)); } });
}

// -- v_log_viewer (c_execution_log_get by byte range, c_ws_log_tail) -----------------------------------------
// The page holds at most LOG_DOM_BYTES of text: a large log opens on its last page; "earlier" pages back by byte
// ranges, and a live tail drops its oldest lines from the page (they stay one click away).
const LOG_PAGE = 256 * 1024, LOG_DOM_BYTES = 2 * 1024 * 1024;
const fmtBytes = (n) => n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1048576).toFixed(1)} MB`;
window.glLog = { lines: 0, chunks: 0, lastText: "" };
async function pageLogViewer(pid, nid, query) {
  const at = query && query.has("at") ? Number(query.get("at")) : null; // a permalink to one line (its byte offset)
  const pidq = encodeURIComponent(pid); const nidq = encodeURIComponent(nid);
  const state = h("div", { id: "log-state", class: "muted" }, "Loading…");
  const notice = h("div", { id: "log-notice", hidden: true });
  const earlier = h("button", { type: "button", class: "secondary", id: "log-earlier", hidden: true }, "Load earlier");
  const paused = h("span", { id: "log-paused", class: "muted", hidden: true }, " auto-scroll paused (scroll to the bottom to resume)");
  // the lines for people (time, kind, text; tool calls and test output collapsed), or the raw lines as written
  const box = h("div", { id: "log-text", class: "log people", tabindex: 0 });
  const filter = h("input", { type: "search", id: "log-filter", placeholder: "filter: text in a line or its detail" });
  const kind = h("select", { id: "log-kind" }, h("option", { value: "" }, "every kind"));
  const raw = h("input", { type: "checkbox", id: "log-raw-toggle" });
  const tools = h("div", { class: "log-tools", id: "log-tools" }, filter, kind,
    h("label", { for: "log-raw-toggle" }, raw, " raw lines"),
    h("a", { href: `/api/projects/${pidq}/logs/${nidq}/download`, id: "log-download", download: `${nid}.log` }, "download the whole log"));
  main().replaceChildren(h("h1", {}, "Execution log ", h("code", {}, nid)), state, notice, tools, earlier, paused, box);
  document.body.dataset.logMode = "loading";
  const kinds = new Set();
  const matches = (el) => (!kind.value || el.dataset.kind === kind.value) && (!filter.value || el.textContent.toLowerCase().includes(filter.value.toLowerCase()));
  const applyFilter = (root) => { for (const el of root.querySelectorAll(".entry")) el.hidden = !matches(el); };
  filter.addEventListener("input", () => applyFilter(box)); kind.addEventListener("change", () => applyFilter(box));
  raw.addEventListener("change", () => { box.classList.toggle("people", !raw.checked); box.classList.toggle("raw-view", raw.checked); });
  const entryEl = (e) => {
    if (!kinds.has(e.kind)) { kinds.add(e.kind); kind.append(h("option", { value: e.kind }, e.kind)); }
    const text = e.detail ? h("details", {}, h("summary", {}, e.text, h("span", { class: "muted" }, e.detail_kind === "text" ? ` (${e.detail.split("\n").length} lines)` : "")), h("pre", {}, e.detail))
      : h("span", { class: "x" }, withBugLinks(pid, e.text));
    const link = e.offset === null || e.offset === undefined ? h("span", { class: "t" }, e.ts ? fmtClock(e.ts) : "")
      : h("a", { class: "t permalink", href: `#/p/${pidq}/logs/${nidq}?at=${e.offset}`, title: `${e.ts || ""} · a link to this line` }, e.ts ? fmtClock(e.ts) : "#");
    const el = h("div", { class: "entry", id: e.offset === null || e.offset === undefined ? null : `at-${e.offset}`,
      dataset: { kind: e.kind, source: e.source || "", offset: e.offset ?? "" } }, link, h("span", { class: "k" }, e.kind), text);
    if (e.offset === at) el.classList.add("linked");
    el.hidden = !matches(el);
    return el;
  };
  const fill = (chunkEl, entries) => { chunkEl.querySelector(".entries").replaceChildren(...entries.map(entryEl)); };
  let meta;
  try { meta = await api("GET", `/api/projects/${pidq}/logs/${nidq}`); }
  catch (err) {
    document.body.dataset.logMode = "error";
    notice.hidden = false; notice.className = "msg error"; notice.dataset.code = err.error ? err.error.code : "ERROR";
    notice.textContent = err.message; state.textContent = ""; tools.hidden = true; return;
  }
  const describe = (v, mode) => {
    const where = [v.stage, v.unit_id].filter(Boolean).join(" · ");
    const log = v.log || {};
    const size = v.status === "open" ? `${fmtBytes(v.size_bytes)} so far` : v.status === "closed" ? `${fmtBytes(log.size_bytes || 0)}, ${log.line_count || 0} lines` : "";
    const why = mode === "live" ? "live: new lines scroll in" : v.status === "open" && meta.ended_because ? `ended: ${meta.ended_because}, nothing writes to it now` : "static: the node has ended";
    state.replaceChildren(pill(v.status || "none"), ` ${where}`, v.task_id ? " · task " : "",
      v.task_id ? h("a", { href: `#/p/${pidq}/t/${encodeURIComponent(v.task_id)}` }, v.task_id) : "",
      size ? " · " : "", size ? h("span", { id: "log-size" }, size) : "", ` · ${why}`);
    state.dataset.status = v.status || "none";
  };
  if (meta.notice) { notice.hidden = false; notice.className = meta.status === "purge_failed" ? "msg error" : "msg info"; notice.dataset.kind = meta.status || "none"; notice.textContent = meta.notice; }
  if (!meta.log || meta.status === "purged") { describe(meta, "static"); box.hidden = true; tools.hidden = true; document.body.dataset.logMode = meta.status === "purged" ? "purged" : "static"; return; }
  let first = 0, last = 0, total = 0, follow = true;
  let unrendered = []; let renderTimer = null;
  const renderLater = () => { // live lines are rendered by the server in batches (one renderer: graphlemon/log_render.py)
    clearTimeout(renderTimer);
    renderTimer = setTimeout(async () => {
      const batch = unrendered.filter((c) => c.isConnected); unrendered = [];
      if (!batch.length) return;
      const from = Number(batch[0].dataset.start), to = Number(batch[batch.length - 1].dataset.end);
      try {
        const r = await api("GET", `/api/projects/${pidq}/logs/${nidq}/range?start=${from}&max=${to - from}&render=1`);
        fill(batch[0], r.entries); for (const c of batch.slice(1)) c.querySelector(".entries").replaceChildren();
        if (follow) box.scrollTop = box.scrollHeight;
      } catch (err) { console.error(err); }
    }, 250);
  };
  const add = (chunk, atTop) => {
    if (!chunk.text) return;
    const el = h("div", { class: "chunk", dataset: { start: chunk.start, end: chunk.end } }, h("div", { class: "entries" }), h("pre", { class: "raw" }, chunk.text));
    if (chunk.entries) fill(el, chunk.entries);
    else { fill(el, chunk.text.split("\n").filter(Boolean).map((line) => ({ kind: "…", text: line }))); unrendered.push(el); renderLater(); }
    if (atTop) box.prepend(el); else box.append(el);
    total += chunk.end - chunk.start;
    window.glLog.lines += (chunk.text.match(/\n/g) || []).length; window.glLog.chunks++; window.glLog.lastText = chunk.text.slice(-200);
    while (!atTop && total > LOG_DOM_BYTES && box.firstChild && box.firstChild !== el) { // the page stays small
      const old = box.firstChild; total -= Number(old.dataset.end) - Number(old.dataset.start); old.remove();
      first = Number(box.firstChild.dataset.start);
    }
    earlier.hidden = first <= 0;
    if (follow && !atTop) box.scrollTop = box.scrollHeight;
  };
  box.addEventListener("scroll", () => {
    follow = box.scrollTop + box.clientHeight >= box.scrollHeight - 8;
    paused.hidden = follow || document.body.dataset.logMode !== "live";
  });
  earlier.addEventListener("click", async () => {
    const start = Math.max(0, first - LOG_PAGE);
    try {
      const chunk = await api("GET", `/api/projects/${pidq}/logs/${nidq}/range?start=${start}&max=${first - start}&render=1`);
      const height = box.scrollHeight;
      first = chunk.start; add(chunk, true); box.scrollTop += box.scrollHeight - height;
    } catch (err) { message(notice, err); }
  });
  try { // the last page only (a 1 GB log is never loaded into the page); a permalink: the page around its line
    const from = at !== null ? Math.max(0, at - LOG_PAGE / 2) : Math.max(0, meta.size_bytes - LOG_PAGE);
    const chunk = await api("GET", `/api/projects/${pidq}/logs/${nidq}/range?start=${from}&max=${LOG_PAGE}&render=1`);
    first = chunk.start; last = chunk.end;
    if (at !== null) follow = false;
    add(chunk, false);
    if (at !== null) {
      const target = document.getElementById(`at-${at}`);
      if (target) { target.scrollIntoView({ block: "center" }); box.scrollTop = Math.max(0, target.offsetTop - box.offsetTop - box.clientHeight / 2); }
      else message(notice, { message: `no line starts at byte ${at} of this log`, error: { code: "INVALID_PARAM" } });
    }
  } catch (err) { message(notice, err); return; }
  const mode = meta.live ? "live" : "static";
  document.body.dataset.logMode = mode; describe(meta, mode);
  const proto = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${proto}://${location.host}/ws/logs`);
  ws.binaryType = "arraybuffer"; // `lines` come as UTF-8 JSON in binary frames (encoded once for every viewer)
  const utf8 = new TextDecoder();
  const mine = { close: () => ws.close() }; current = mine;
  ws.onopen = () => ws.send(JSON.stringify({ project: pid, node: nid, from: last }));
  ws.onmessage = (m) => {
    const msg = JSON.parse(typeof m.data === "string" ? m.data : utf8.decode(m.data));
    if (msg.type === "lines" && msg.start === last) { last = msg.end; add(msg, false); const sz = document.getElementById("log-size"); if (sz) sz.textContent = `${fmtBytes(msg.size)} so far`; }
    else if (msg.type === "meta") describe(msg.view, msg.view.status === "open" && meta.live ? "live" : "static");
    else if (msg.type === "end") { document.body.dataset.logMode = "static"; paused.hidden = true; describe(msg.view, "static"); }
    else if (msg.type === "error") { notice.hidden = false; notice.className = "msg error"; notice.dataset.code = msg.error.code; notice.textContent = `error[${msg.error.code}]: ${msg.error.message}`; }
  };
  ws.onclose = (ev) => {
    if (current !== mine || document.body.dataset.logMode === "static") return;
    if (ev.code >= 4400 && ev.code < 4500) return;
    setBanner("Log stream lost — reconnecting…", "lost");
    setTimeout(() => { if (current === mine) route(); }, 1500); // the page reloads its view (its lines are read again)
  };
}
const fmtClock = (iso) => { const t = new Date(iso); return Number.isNaN(t.getTime()) ? iso : `${fmtTime(iso)}.${String(t.getMilliseconds()).padStart(3, "0")}`; };

// a task's execution logs (graphlemon logs --task)
async function pageTaskLogs(pid, tid) {
  const pidq = encodeURIComponent(pid);
  const box = h("div", { id: "task-logs", class: "card" }, "Loading…");
  main().replaceChildren(h("h1", {}, `Execution logs of ${tid}`), box);
  try {
    const { logs } = await api("GET", `/api/projects/${pidq}/tasks/${encodeURIComponent(tid)}/logs`);
    if (!logs.length) { box.replaceChildren(h("p", { class: "muted" }, "No execution log yet.")); return; }
    box.replaceChildren(logTable(pid, logs, false));
  } catch (err) { message(box, err); }
}

// -- v_log_retention_settings (c_log_retention_config_update) ----------------------------------------------------
async function pageLogRetention(pid, into) {
  const pidq = encodeURIComponent(pid);
  const info = h("div", { id: "retention-info", class: "card" }, "Loading…");
  const days = h("input", { type: "number", id: "retention-days", min: "1", max: "3650", step: "1" });
  const msg = h("div", { id: "retention-msg", hidden: true });
  const form = h("form", { class: "stack card", id: "retention-form", novalidate: true },
    h("label", { for: "retention-days" }, "Keep closed logs for (days)"), days,
    h("p", { class: "muted" }, "The daily log-retention run deletes closed logs older than this; an open log is never touched."),
    h("button", { type: "submit" }, "Save"), msg);
  const show = (r) => {
    info.replaceChildren(h("div", { class: "kv" },
      h("b", {}, "retention"), h("span", { id: "retention-now" }, `${r.retention_days} day(s)`),
      h("b", {}, "set by"), h("span", {}, r.set_by === "default" ? "default" : [`${r.set_by}, `, fmtWhen(r.set_at)]),
      h("b", {}, "logs"), h("span", { id: "retention-counts" }, Object.entries(r.logs).map(([k, v]) => `${v} ${k}`).join(", ") || "none yet")));
    days.value = r.retention_days;
  };
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const raw = days.value.trim();
      const r = await api("POST", `/api/projects/${pidq}/log-retention`, { retention_days: /^-?\d+$/.test(raw) ? Number(raw) : raw });
      show(r); message(msg, null, `Saved: closed logs are kept ${r.retention_days} day(s).`);
    } catch (err) { message(msg, err); }
  });
  if (into) into.replaceChildren(h("h2", {}, "Log retention"), info, form);
  else main().replaceChildren(h("h1", {}, "Log retention"), info, form);
  try { show(await api("GET", `/api/projects/${pidq}/log-retention`)); } catch (err) { message(info, err); }
}

// -- people's text rendered: markdown (HTML made by the server with markdown-it, raw HTML off, links only http(s):
// graphlemon/console/rendering.py), a diff's numbered lines; bug ids in either are links ----------------------------
function renderedHtml(html, pid, attrs) {
  const box = h("div", { class: "md", ...(attrs || {}) });
  box.innerHTML = html; // escaped by the server: every character of the input is text in it
  if (pid) linkBugsIn(box, pid);
  return box;
}
function linkBugsIn(root, pid) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const hits = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (/bug-\d{8}-\d{4}-[0-9a-f]{4,}/.test(n.nodeValue) && !n.parentElement.closest("a")) hits.push(n);
  for (const n of hits) n.replaceWith(...withBugLinks(pid, n.nodeValue));
}
function renderDiff(lines, pid) {
  const sign = { add: "+", del: "-", ctx: " " };
  return h("table", { class: "diff", id: "artifact-diff" }, lines.map((l, i) => (l.kind in sign
    ? h("tr", { class: `d-${l.kind}`, id: `L${i + 1}` }, h("td", { class: "ln" }, l.old ?? ""), h("td", { class: "ln" }, l.new ?? ""),
      h("td", { class: "sign" }, sign[l.kind]), h("td", { class: "code" }, l.text))
    : h("tr", { class: `d-${l.kind}`, id: `L${i + 1}` }, h("td", { class: "code", colspan: 4 }, pid ? withBugLinks(pid, l.text) : l.text)))));
}
const fmtWhen = (iso) => { // a date a person reads: the time today, else the date and time; the full date on hover
  if (!iso) return h("span", { class: "muted" }, "—");
  const t = new Date(iso); const today = new Date().toDateString() === t.toDateString();
  return h("time", { datetime: iso, title: `${t.toString()} (${iso})` }, today ? fmtTime(iso) : `${fmtDay(t)} ${fmtTime(iso)}`);
};

// -- an artifact at its own URL: #/p/<project>/artifacts/<artifact id> -------------------------------------------------
async function pageArtifact(pid, aid) {
  const pidq = encodeURIComponent(pid); const aidq = encodeURIComponent(aid);
  const box = h("div", { id: "artifact-page" }, h("p", { class: "muted" }, "Loading…"));
  main().replaceChildren(h("h1", {}, "Artifact ", h("code", {}, aid)), box);
  try {
    const v = await api("GET", `/api/projects/${pidq}/artifacts/${aidq}/view`);
    const a = v.artifact;
    const body = v.kind === "diff" ? renderDiff(v.lines, pid) : v.kind === "markdown" ? renderedHtml(v.html, pid, { id: "artifact-md" })
      : h("pre", { id: "artifact-text" }, withBugLinks(pid, v.text));
    put(box, h("p", { id: "artifact-meta" }, h("b", {}, `${a.artifact_type} v${a.version}`), a.unit_id ? ` · unit ${a.unit_id}` : "",
      a.title ? ` · ${a.title}` : "", " · ", fmtWhen(a.ts), a.task_id ? " · task " : "",
      a.task_id ? h("a", { href: `#/p/${pidq}/t/${encodeURIComponent(a.task_id)}`, id: "artifact-task" }, a.task_id) : "",
      " · ", h("a", { href: `/api/projects/${pidq}/artifacts/${aidq}`, id: "artifact-raw" }, "raw text")),
    h("div", { class: "card artifact-body" }, body));
  } catch (err) { message(box, err); }
}

// a row's "ended" and "took" cells: a task not ended is going on only while a run holds it (`r.run`, its lease)
function runTimes(r) {
  const cell = (...kids) => h("td", { class: "time" }, ...kids);
  if (r.ended) return [cell(fmtWhen(r.ended)), cell(fmtDuration(r.duration_s))];
  if (noRun({ run: { state: r.run } })) return [cell(h("span", { class: "muted" }, "no run holds it")), cell(...lastRunSaid(r.last_run))];
  return [cell("—"), cell("going on")];
}

// -- every run across the listed projects: #/runs?status=…&since=… ----------------------------------------------------
const SINCE = { "": "any time", "1": "the last 24 hours", "7": "the last 7 days", "30": "the last 30 days" };
async function pageRuns(query) {
  const box = h("div", { id: "runs" }, h("p", { class: "muted" }, "Loading…"));
  main().replaceChildren(h("h1", {}, "Runs in every project"), box);
  let data;
  try { data = await api("GET", "/api/runs"); } catch (err) { message(box, err); return; }
  const statuses = [...new Set(data.runs.map((r) => r.status))].sort();
  const status = h("select", { id: "runs-status" }, h("option", { value: "" }, "every status"),
    statuses.map((st) => h("option", { value: st, selected: query.get("status") === st }, said(st, "status"))));
  const since = h("select", { id: "runs-since" }, Object.entries(SINCE).map(([v, label]) => h("option", { value: v, selected: (query.get("since") || "") === v }, label)));
  const table = h("div", {});
  const draw = () => {
    const days = Number(since.value || 0); const from = days ? Date.now() - days * 86400e3 : 0;
    const shown = data.runs.filter((r) => (!status.value || r.status === status.value) && new Date(r.started).getTime() >= from);
    const qs = new URLSearchParams(Object.entries({ status: status.value, since: since.value }).filter(([, v]) => v)).toString();
    history.replaceState(null, "", `#/runs${qs ? `?${qs}` : ""}`); // a filtered list is a link
    put(table, h("p", { class: "muted", id: "runs-count" }, `${shown.length} of ${data.runs.length} run(s)`),
      data.unreadable.length ? h("div", { class: "msg error" }, data.unreadable.map((u) => `${u.name}: ${u.error}`).join("; ")) : null,
      shown.length ? h("table", { id: "runs-table" }, h("tr", {}, ["project", "task", "status", "goal", "started", "ended", "took"].map((c) => h("th", {}, c))),
        shown.map((r) => h("tr", { dataset: { task: r.task_id, status: r.status } },
          h("td", {}, h("a", { href: `#/p/${encodeURIComponent(r.project_id)}` }, r.project)),
          h("td", { class: "id" }, h("a", { href: `#/p/${encodeURIComponent(r.project_id)}/t/${encodeURIComponent(r.task_id)}` }, r.task_id)),
          h("td", {}, pill(r.status, r.blocked_reason)), h("td", { class: "goal" }, r.goal_text),
          h("td", { class: "time" }, fmtWhen(r.started)), ...runTimes(r)))) : null);
  };
  box.replaceChildren(h("div", { class: "filters card", id: "runs-filters" }, h("label", { class: "filter" }, "status ", status),
    h("label", { class: "filter" }, "started ", since)), table);
  status.addEventListener("change", draw); since.addEventListener("change", draw);
  draw();
}

// -- the nav's Logs: every execution log of the project, newest first, then the retention setting ------------------
async function pageProjectLogs(pid) {
  const pidq = encodeURIComponent(pid);
  const list = h("div", { id: "project-logs", class: "card" }, "Loading…");
  const retention = h("div", { id: "retention" });
  main().replaceChildren(h("h1", {}, "Execution logs"), list, retention);
  pageLogRetention(pid, retention);
  try {
    const { logs } = await api("GET", `/api/projects/${pidq}/logs`);
    if (!logs.length) { list.replaceChildren(h("p", { class: "muted" }, "No execution log yet: a task's nodes write one each.")); return; }
    list.replaceChildren(logTable(pid, logs, true));
  } catch (err) { message(list, err); }
}
function logTable(pid, logs, withTask) {
  const pidq = encodeURIComponent(pid);
  return h("table", { id: "logs-table" }, h("tr", {}, [...(withTask ? ["task"] : []), "node", "stage", "unit", "state", "size", "lines", "created"].map((c) => h("th", {}, c))),
    logs.map((g) => h("tr", { dataset: { node: g.node_exec_id } },
      withTask ? h("td", { class: "id" }, g.task_id ? h("a", { href: `#/p/${pidq}/t/${encodeURIComponent(g.task_id)}` }, g.task_id) : "") : null,
      h("td", { class: "id" }, h("a", { href: `#/p/${pidq}/logs/${encodeURIComponent(g.node_exec_id)}` }, g.node_exec_id)),
      h("td", {}, g.stage || ""), h("td", {}, g.unit_id || ""), h("td", {}, pill(g.status)),
      h("td", {}, g.size_bytes == null ? "" : fmtBytes(g.size_bytes)), h("td", {}, g.line_count == null ? "" : String(g.line_count)),
      h("td", { class: "time" }, fmtWhen(g.created_at)))));
}
