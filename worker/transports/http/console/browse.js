// The browse view: the caller's workspace as a tree by parent, one session's facts, its
// lineage (session_trace), its events (session_event_read, ±N around any event, paged)
// and a search in it (session_event_search); a workspace search (session_search).
// Every answer is shown with links (links.js); every string is set as text.

import { callTool } from "./api.js";
import { el, sessionLink } from "./dom.js";
import { markTerms } from "./highlight.js";
import { renderAnswer, sessionHref } from "./links.js";
import { showTranscript } from "./transcript.js";
import { localTime } from "./when.js";

const $ = (id) => document.getElementById(id);
const WINDOW_KEY = "sessionq.window";
const DEFAULT_WINDOW = 5;
const MAX_WINDOW = 50; // the tools' readWindowMax

// The newest request of the detail pane and of its events panel: older answers are dropped.
let generation = 0;
let eventsGeneration = 0;
let traceGeneration = 0; // the lineage asked for shownSession: a later route to it asks nothing
let shownSession = null; // the session whose facts and lineage the detail pane shows
let shownWindow = null; // {id, center, start, end} of the events panel

const isoTime = (ms) => (typeof ms === "number" ? new Date(ms).toISOString() : "");

// An answer into a <pre>: linked text, or the error line; data-state says which.
function showAnswer(pre, tool, answer, target, ctx, landing = false) {
  if (answer.ok) {
    const { fragment, refs } = renderAnswer(tool, answer.text, { target, known: ctx.known, landing });
    pre.replaceChildren(fragment);
    pre.dataset.state = "ok";
    return refs;
  }
  pre.textContent = answer.message;
  pre.dataset.state = "error";
  pre.dataset.code = answer.code || "";
  return [];
}

function running(pre) {
  pre.dataset.state = "running";
  delete pre.dataset.code;
}

// ---- the session list -----------------------------------------------------------------
function sessionItem(s, ctx) {
  const a = el("a", "session");
  a.href = sessionHref(s.id);
  a.dataset.id = s.id;
  a.title = s.id;
  a.append(el("span", "title", s.title || "untitled"));
  const sub = el("span", "sub", `${s.source_agent || "dsh"} · ${localTime(s.created_at)}`);
  if (s.parent === "[outside workspace]") sub.append(" · parent outside workspace");
  if (s.live) sub.append(el("span", "tag live", "live"));
  if (s.id === ctx.callerId) sub.append(el("span", "tag caller", "caller"));
  a.append(sub);
  return a;
}

// Roots newest first; children under their parent, oldest first (as they happened). A
// session whose parent is not listed is a root; a parent cycle cannot hide a session.
export function renderSessionList(ctx) {
  const list = $("session-list");
  const children = new Map();
  for (const s of ctx.sessions) {
    if (s.parent && ctx.byId.has(s.parent) && s.parent !== s.id) {
      if (!children.has(s.parent)) children.set(s.parent, []);
      children.get(s.parent).push(s);
    }
  }
  for (const kids of children.values()) kids.sort((a, b) => (a.created_at || 0) - (b.created_at || 0));
  const roots = ctx.sessions.filter((s) => !(s.parent && ctx.byId.has(s.parent) && s.parent !== s.id));
  const placed = new Set();
  const branch = (s) => {
    placed.add(s.id);
    const li = el("li");
    li.append(sessionItem(s, ctx));
    const kids = (children.get(s.id) || []).filter((k) => !placed.has(k.id));
    if (kids.length) {
      const ul = el("ul");
      ul.append(...kids.map(branch));
      li.append(ul);
    }
    return li;
  };
  const items = roots.map(branch);
  for (const s of ctx.sessions) if (!placed.has(s.id)) items.push(branch(s)); // a cycle
  list.replaceChildren(...items);
  markSelected();
}

function markSelected() {
  for (const a of document.querySelectorAll("#session-list a.session")) {
    if (a.dataset.id === shownSession) a.setAttribute("aria-current", "true");
    else a.removeAttribute("aria-current");
  }
}

// ---- one session ----------------------------------------------------------------------
function fact(dl, name, ...value) {
  const dd = el("dd");
  dd.append(...value);
  dl.append(el("dt", "", name), dd);
}

function renderFacts(ctx, id) {
  const s = ctx.byId.get(id) || null;
  $("detail-title").textContent = s ? s.title || "untitled" : id;
  const dl = $("detail-meta");
  dl.replaceChildren();
  fact(dl, "Session", id);
  if (!s) {
    fact(dl, "Listed", "not in the caller's workspace list");
    return;
  }
  fact(dl, "Agent", s.source_agent || "dsh");
  const created = el("span", "", localTime(s.created_at));
  created.title = isoTime(s.created_at);
  fact(dl, "Created", created);
  fact(dl, "Availability", s.live ? "live, persisted" : "persisted");
  fact(dl, "Workspace", s.cwd || "none (only its own log is readable)");
  if (!s.parent) fact(dl, "Parent", "none (a root session)");
  else if (ctx.byId.has(s.parent)) fact(dl, "Parent", sessionLink(s.parent, ctx.byId.get(s.parent).title || s.parent));
  else fact(dl, "Parent", s.parent);
  const kids = ctx.sessions.filter((k) => k.parent === id);
  const nodes = [];
  kids.forEach((k, i) => { if (i) nodes.push(", "); nodes.push(sessionLink(k.id, k.title || k.id)); });
  fact(dl, "Children", ...(nodes.length ? nodes : ["none"]));
  if (typeof s.last_seq === "number") fact(dl, "Events", `${s.last_seq + 1} (seq 0–${s.last_seq})`);
}

export function windowSize() {
  const input = $("event-window");
  const n = Number(input.value);
  if (!Number.isInteger(n) || n < 0) return DEFAULT_WINDOW;
  return Math.min(n, MAX_WINDOW);
}

export function initWindowSize() {
  let n = DEFAULT_WINDOW;
  try { n = Number(sessionStorage.getItem(WINDOW_KEY) || DEFAULT_WINDOW); } catch (_) { /* private */ }
  $("event-window").value = String(Number.isInteger(n) && n >= 0 ? Math.min(n, MAX_WINDOW) : DEFAULT_WINDOW);
}

function rememberWindowSize() {
  try { sessionStorage.setItem(WINDOW_KEY, String(windowSize())); } catch (_) { /* private */ }
}

async function readEvents(ctx, id, center) {
  const gen = ++eventsGeneration;
  const n = windowSize();
  const pre = $("events-output");
  $("event-seq").value = String(center);
  running(pre);
  const answer = await callTool(
    "session_event_read", { session_id: id, seq: center, before: n, after: n }, ctx.callerArg(),
  );
  if (gen !== eventsGeneration) return;
  const refs = showAnswer(pre, "session_event_read", answer, id, ctx);
  const seqs = refs.filter((r) => r.seq !== undefined && r.session === id).map((r) => r.seq);
  for (const a of pre.querySelectorAll("a[data-seq]")) {
    if (Number(a.dataset.seq) === center) a.classList.add("current");
  }
  const last = (ctx.byId.get(id) || {}).last_seq;
  const start = seqs.length ? Math.min(...seqs) : center;
  const end = seqs.length ? Math.max(...seqs) : center;
  shownWindow = { id, center, start, end };
  pre.dataset.session = id;
  pre.dataset.seq = String(center);
  pre.dataset.window = String(n);
  $("events-range").textContent = answer.ok
    ? `seq ${start}–${end}${typeof last === "number" ? ` of 0–${last}` : ""}` : "";
  $("events-prev").disabled = !answer.ok || start <= 0;
  $("events-next").disabled = !answer.ok || (typeof last === "number" && end >= last);
}

function showMode(id, mode) {
  $("transcript-section").hidden = mode !== "transcript";
  $("model-section").hidden = mode !== "model";
  $("subtab-transcript").href = sessionHref(id);
  $("subtab-model").href = `${sessionHref(id)}/model`;
  for (const [name, tab] of [["transcript", "subtab-transcript"], ["model", "subtab-model"]]) {
    if (name === mode) $(tab).setAttribute("aria-current", "page");
    else $(tab).removeAttribute("aria-current");
  }
  document.body.dataset.session = mode;
}

export const shownSessionId = () => shownSession;

// The session `id`: its conversation (landing on `seq`) or its model view, with the
// model view's events around `seq` (null: the first window).
export async function showSession(ctx, id, seq, mode = "transcript") {
  const gen = ++generation;
  $("session-view").hidden = false;
  $("search-view").hidden = true;
  showMode(id, mode);
  const n = windowSize();
  const s = ctx.byId.get(id);
  const last = s && typeof s.last_seq === "number" ? s.last_seq : null;
  const first = last === null ? n : Math.min(n, last);
  const center = seq === null ? first : (last === null ? seq : Math.min(seq, last));
  const reads = [readEvents(ctx, id, Math.max(0, center))];
  if (mode === "transcript") reads.push(showTranscript(ctx, id, seq));
  if (shownSession !== id) {
    shownSession = id;
    renderFacts(ctx, id);
    markSelected();
    const search = $("event-search-output");
    search.hidden = true;
    search.replaceChildren();
    $("event-query").value = "";
    const trace = $("trace-output");
    running(trace);
    const asked = ++traceGeneration;
    reads.push(callTool("session_trace", { session_id: id }, ctx.callerArg()).then((answer) => {
      if (asked !== traceGeneration || shownSession !== id) return;
      showAnswer(trace, "session_trace", answer, id, ctx);
      trace.dataset.session = id;
    }));
  }
  await Promise.all(reads);
  if (mode === "model" && seq !== null && gen === generation) {
    $("events-heading").scrollIntoView({ block: "start" });
  }
}

// The facts of the shown session again (the workspace list changed).
export function refreshFacts(ctx) {
  if (shownSession !== null) renderFacts(ctx, shownSession);
  markSelected();
}

export function forgetShown() { shownSession = null; shownWindow = null; traceGeneration++; }

export async function showSearch(ctx, query) {
  const gen = ++generation;
  eventsGeneration++;
  shownSession = null;
  markSelected();
  $("session-view").hidden = true;
  $("search-view").hidden = false;
  $("search-title").textContent = `Search: ${query}`;
  $("search-query").value = query;
  const pre = $("search-output");
  running(pre);
  const answer = await callTool("session_search", { query }, ctx.callerArg());
  if (gen !== generation) return;
  showAnswer(pre, "session_search", answer, null, ctx, true);
  if (answer.ok) pre.dataset.marks = String(markTerms(pre, query));
  pre.dataset.query = query;
}

// ---- wiring ---------------------------------------------------------------------------
export function wireBrowse(ctx, navigate) {
  initWindowSize();
  $("search-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const q = $("search-query").value.trim();
    if (q) navigate(`#/search/${encodeURIComponent(q)}`);
  });
  $("events-form").addEventListener("submit", (e) => {
    e.preventDefault();
    rememberWindowSize();
    const seq = Number($("event-seq").value);
    if (shownSession !== null && Number.isInteger(seq) && seq >= 0) {
      navigate(`${sessionHref(shownSession)}/e/${seq}`, true);
    }
  });
  $("event-window").addEventListener("change", () => {
    rememberWindowSize();
    if (shownWindow) readEvents(ctx, shownWindow.id, shownWindow.center);
  });
  const page = (forward) => {
    if (!shownWindow) return;
    const n = windowSize();
    const { id, start, end } = shownWindow;
    const center = forward ? end + 1 + n : Math.max(0, start - 1 - n);
    navigate(`${sessionHref(id)}/e/${center}`);
  };
  $("events-prev").addEventListener("click", () => page(false));
  $("events-next").addEventListener("click", () => page(true));
  $("event-search-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const q = $("event-query").value.trim();
    if (!q || shownSession === null) return;
    const id = shownSession;
    const pre = $("event-search-output");
    pre.hidden = false;
    running(pre);
    const answer = await callTool("session_event_search", { session_id: id, query: q }, ctx.callerArg());
    if (shownSession === id) showAnswer(pre, "session_event_search", answer, id, ctx);
  });
}
