// The status view and the readiness badge: /v1/status every 2 s. A change in the number of
// stored sessions is reported (the page reloads its lists).

import { getJSON } from "./api.js";

const $ = (id) => document.getElementById(id);
const REFRESH_MS = 2000;

const fmt = (n) => (typeof n === "number" ? n.toLocaleString("en-US") : "—");

function ago(seconds) {
  if (seconds < 1) return "just now";
  if (seconds < 90) return `${Math.round(seconds)} s ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
  return `${(seconds / 3600).toFixed(1)} h ago`;
}

function setText(id, text) { $(id).textContent = text; }

function render(body) {
  const status = $("status");
  const badge = $("ready-badge");
  $("status-error").hidden = true;
  status.setAttribute("aria-busy", "false");
  status.dataset.ready = String(Boolean(body.ready));
  setText("status-ready", body.ready ? "yes" : "no — initial ingest running");
  badge.textContent = body.ready ? "ready" : "ingesting…";
  badge.className = "badge " + (body.ready ? "ok" : "wait");
  setText("status-sessions", fmt(body.sessions));
  setText("status-events", fmt(body.events));
  setText("status-documents", fmt(body.documents));
  setText("status-workspaces", fmt(body.workspaces));
  if (typeof body.last_applied_at === "number") {
    const at = new Date(body.last_applied_at * 1000);
    setText("status-last-applied",
      `${at.toISOString().replace("T", " ").slice(0, 19)} UTC (${ago(Date.now() / 1000 - body.last_applied_at)})`);
  } else {
    setText("status-last-applied", "never");
  }
  const lag = body.lag || {};
  const since = typeof lag.seconds_since_scan === "number" ? `, last scan ${ago(lag.seconds_since_scan)}` : "";
  setText("status-lag", `${fmt(lag.pending_changes ?? 0)} pending changes${since}`);
  const rejected = Object.entries(body.rejected_files || {});
  setText("status-rejected", rejected.length ? String(rejected.length) : "none");
  $("rejected-list").replaceChildren(...rejected.map(([path, reason]) => {
    const li = document.createElement("li");
    li.textContent = reason || path;
    return li;
  }));
  $("rejected-list").hidden = rejected.length === 0;
}

// Poll forever; `onSessions(first)` runs after the first answer and whenever the stored
// session count changes (`first` says which).
export function watchStatus(onSessions) {
  let lastCount = null;
  const refresh = async () => {
    try {
      const { status, body } = await getJSON("/v1/status");
      if (status === 401) throw new Error("HTTP 401: enter the API token");
      if (status !== 200 || !body) throw new Error(`HTTP ${status}`);
      render(body);
      const first = lastCount === null;
      const changed = body.sessions !== lastCount;
      lastCount = body.sessions;
      if (changed) onSessions(first);
    } catch (err) {
      const badge = $("ready-badge");
      badge.textContent = err.message.startsWith("HTTP 401") ? "token needed" : "unreachable";
      badge.className = "badge err";
      $("status-error").textContent = `Status unavailable: ${err.message}`;
      $("status-error").hidden = false;
    } finally {
      setTimeout(refresh, REFRESH_MS);
    }
  };
  refresh();
}
