// The console's entry. The caller is the page's ?caller=, else the first candidate of
// GET /v1/callers (main before subagent, live before closed, newest first); the picker in
// the header changes it (and writes it into ?caller=). The views follow the URL fragment:
//   #/  browse, the caller's own session          #/s/<id>  a session's conversation
//   #/s/<id>/t/<seq>  the conversation at an event  #/s/<id>/e/<seq>  the model view at an event
//   #/s/<id>/model  the model view                 #/search/<query>  a workspace search
//   #/usage  #/playground  #/status
// so every link is a plain <a href>, a view can be shared and reloaded, and back/forward
// walk the history.

import { getJSON, httpError, onUnauthorized, takeTokenFromUrl, token } from "./api.js";
import * as browse from "./browse.js";
import { wireExport } from "./exporter.js";
import { wirePalette } from "./palette.js";
import { renderCandidates, wirePicker } from "./picker.js";
import * as playground from "./playground.js";
import { watchStatus } from "./status.js";
import { forgetTranscript, wireTranscript } from "./transcript.js";
import { renderUsage } from "./usage.js";

takeTokenFromUrl();

const $ = (id) => document.getElementById(id);
const VIEWS = ["browse", "usage", "playground", "status"];
const MAX_LISTED = 500; // /v1/sessions' bound (worker/http/console_api.py)

const ctx = {
  callerId: "",
  callerChosen: false, // from the URL or the picker, not the server's default
  candidates: [],
  sessions: [], // the caller's workspace, newest first
  byId: new Map(),
  known: new Set(), // ids linked wherever they appear in an answer
  callerArg() { return { session_id: this.callerId }; },
};

async function loadCandidates() {
  const { status, body } = await getJSON("/v1/callers");
  if (status !== 200 || !body || !Array.isArray(body.callers)) return httpError(status, body);
  ctx.candidates = body.callers;
  renderCandidates(ctx);
  return null;
}

function setSessions(list) {
  ctx.sessions = list.slice().sort((a, b) => (b.created_at || 0) - (a.created_at || 0));
  ctx.byId = new Map(ctx.sessions.map((s) => [s.id, s]));
  ctx.known = new Set(ctx.sessions.map((s) => s.id));
}

function showCaller(problem) {
  const summary = $("caller-summary");
  const c = ctx.byId.get(ctx.callerId) || ctx.candidates.find((x) => x.id === ctx.callerId);
  summary.classList.toggle("error-text", Boolean(problem));
  summary.dataset.source = ctx.callerChosen ? "chosen" : "default";
  if (problem) {
    summary.textContent = problem;
  } else if (c) {
    const why = ctx.callerChosen ? "" : " · newest main session (default)";
    summary.textContent = `${c.title || "untitled"} · ${c.cwd || "no workspace"} · ${c.source_agent || "dsh"}${why}`;
  } else {
    summary.textContent = ctx.callerId ? "" : "no session in the store yet";
  }
  const own = ctx.byId.get(ctx.callerId);
  $("workspace").textContent = own ? `${own.cwd || "(no workspace)"} · ${ctx.sessions.length}` : "";
  $("sessions-note").textContent = own && !own.cwd
    ? "This caller has no workspace: the tools let it read only its own log."
    : ctx.sessions.length >= MAX_LISTED ? `The newest ${MAX_LISTED} sessions of the workspace.` : "";
}

// The caller's workspace from /v1/sessions; false when it cannot be listed.
async function loadWorkspace() {
  const id = ctx.callerId;
  const input = $("caller");
  if (!id) return false;
  const { status, body } = await getJSON(`/v1/sessions?caller=${encodeURIComponent(id)}`);
  if (id !== ctx.callerId) return false; // another caller was chosen meanwhile
  const ok = status === 200 && Array.isArray(body);
  setSessions(ok ? body : []);
  input.dataset.loaded = String(ctx.sessions.length);
  showCaller(ok ? null : `caller ${id}: ${httpError(status, body)}`);
  browse.renderSessionList(ctx);
  browse.refreshFacts(ctx);
  playground.callerChanged(ctx);
  if (document.body.dataset.view === "usage") renderUsage(ctx);
  return ok;
}

async function setCaller(id, chosen) {
  ctx.callerId = id;
  ctx.callerChosen = chosen;
  $("caller").value = id;
  const params = new URLSearchParams(location.search);
  if (chosen) params.set("caller", id);
  const query = params.toString();
  history.replaceState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
  browse.forgetShown();
  forgetTranscript();
  await loadWorkspace();
}

// ---- views ----------------------------------------------------------------------------
function navigate(hash, force) {
  if (location.hash === hash) {
    if (force) route();
  } else {
    location.hash = hash;
  }
}

function decode(part) {
  try { return decodeURIComponent(part); } catch (_) { return part; }
}

function showView(view) {
  for (const name of VIEWS) {
    $(`view-${name}`).hidden = name !== view;
    const tab = $(`tab-${name}`);
    if (name === view) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
  document.body.dataset.view = view;
}

function route() {
  const parts = (location.hash.replace(/^#/, "") || "/").split("/").slice(1);
  const view = VIEWS.includes(parts[0]) && parts[0] !== "browse" ? parts[0] : "browse";
  showView(view);
  if (view === "usage") renderUsage(ctx);
  if (view !== "browse") return;
  $("tab-browse").href = location.hash || "#/"; // back to this place from the other views
  if (!ctx.callerId) return;
  if (parts[0] === "search" && parts.length > 1) {
    browse.showSearch(ctx, decode(parts.slice(1).join("/")));
  } else if (parts[0] === "s" && parts[1]) {
    const seq = /^(e|t)$/.test(parts[2] || "") && /^\d+$/.test(parts[3] || "") ? Number(parts[3]) : null;
    const mode = parts[2] === "e" || parts[2] === "model" ? "model" : "transcript";
    browse.showSession(ctx, decode(parts[1]), seq, mode);
  } else {
    browse.showSession(ctx, ctx.callerId, null, "transcript");
  }
}

// ---- start ----------------------------------------------------------------------------
// The lists again; true when it also routed (a first caller was chosen).
async function reloadAll() {
  const problem = await loadCandidates();
  if (!ctx.callerId) {
    const first = ctx.candidates[0];
    if (first) {
      await setCaller(first.id, false);
      route();
      return true;
    }
    showCaller(problem);
    return false;
  }
  await loadWorkspace();
  return false;
}

async function start() {
  window.addEventListener("hashchange", route);
  browse.wireBrowse(ctx, navigate);
  playground.wirePlayground(ctx);
  $("token").value = token.get();
  $("token").addEventListener("change", () => {
    token.set($("token").value);
    $("auth-banner").hidden = true;
    playground.loadDescriptions();
    reloadAll().then((routed) => { if (!routed) route(); });
  });
  onUnauthorized(() => { $("auth-banner").hidden = false; });
  $("caller-form").addEventListener("submit", (e) => e.preventDefault());
  wireTranscript(ctx);
  wirePalette(ctx, navigate);
  wireExport(ctx, browse.shownSessionId);
  wirePicker(ctx, async (id) => {
    if (id === ctx.callerId) return;
    await setCaller(id, true);
    navigate("#/", true);
  });
  $("caller").addEventListener("change", async () => {
    const id = $("caller").value.trim();
    if (!id || id === ctx.callerId) return;
    $("caller-dialog").close();
    await setCaller(id, true);
    if (document.body.dataset.view === "browse") navigate("#/", true);
  });
  playground.fillExample(ctx);
  playground.loadDescriptions();
  // The first status answer matters only when the store had no session when the page
  // asked for callers (an initial ingest still running), so it waits for that first
  // listing, which chooses the caller; later changes reload the lists.
  let listed = null;
  watchStatus(async (first) => {
    if (first) await listed;
    if (!first || !ctx.callerId) reloadAll();
  });
  route();

  const requested = new URLSearchParams(location.search).get("caller") || "";
  if (requested) {
    // a caller in the address: the view's reads start now, beside the lists'
    ctx.callerId = requested;
    ctx.callerChosen = true;
    $("caller").value = requested;
    route();
  }
  listed = loadCandidates();
  const problem = await listed;
  const id = requested || (ctx.candidates[0] ? ctx.candidates[0].id : "");
  if (!id) {
    showCaller(problem);
    return;
  }
  if (requested) {
    await loadWorkspace();
    return;
  }
  await setCaller(id, false);
  route();
}

start();
