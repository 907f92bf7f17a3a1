// The usage view: the caller's workspace by day and by agent — sessions, how many of them
// are subagents, and events. It counts the sessions /v1/sessions lists for the caller (the
// tools' workspace rule, the newest 500 at most), so it shows nothing the tools would not.
// Token counts are not kept in the store, so none are shown.

import { el } from "./dom.js";
import { localTime } from "./when.js";

const $ = (id) => document.getElementById(id);
const fmt = (n) => n.toLocaleString("en-US");

function dayOf(s) {
  return typeof s.created_at === "number" ? localTime(s.created_at).slice(0, 10) : "unknown";
}

// Rows of {key, sessions, subagents, events}, one per key.
export function tally(sessions, keyOf) {
  const rows = new Map();
  for (const s of sessions) {
    const key = keyOf(s);
    const row = rows.get(key) || { key, sessions: 0, subagents: 0, events: 0 };
    row.sessions += 1;
    if (s.parent) row.subagents += 1;
    if (typeof s.last_seq === "number") row.events += s.last_seq + 1;
    rows.set(key, row);
  }
  return [...rows.values()];
}

function fill(body, rows) {
  const most = Math.max(1, ...rows.map((r) => r.events));
  body.replaceChildren(...rows.map((r) => {
    const tr = document.createElement("tr");
    tr.dataset.key = r.key;
    const share = document.createElement("meter");
    share.min = 0;
    share.max = most;
    share.value = r.events;
    share.title = `${fmt(r.events)} events`;
    const bar = document.createElement("td");
    bar.append(share);
    const head = el("th", "", r.key);
    head.scope = "row";
    tr.append(head, el("td", "", fmt(r.sessions)), el("td", "", fmt(r.subagents)),
      el("td", "", fmt(r.events)), bar);
    return tr;
  }));
}

export function renderUsage(ctx) {
  const view = $("usage");
  const list = ctx.sessions;
  const own = ctx.byId.get(ctx.callerId);
  $("usage-scope").textContent = own
    ? `${own.cwd || "(no workspace: this session alone)"} · ${fmt(list.length)} sessions`
    : "no caller yet";
  const days = tally(list, dayOf).sort((a, b) => (a.key < b.key ? 1 : a.key > b.key ? -1 : 0));
  const agents = tally(list, (s) => s.source_agent || "dsh")
    .sort((a, b) => b.events - a.events || (a.key < b.key ? -1 : 1));
  fill($("usage-days"), days);
  fill($("usage-agents"), agents);
  view.dataset.sessions = String(list.length);
  view.dataset.state = "ok";
}
