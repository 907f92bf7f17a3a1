// Choosing who you are: the caller picker lists the sessions of GET /v1/callers by
// workspace (title, agent, time, live or subagent), filtered as you type; ↑/↓ move,
// Enter or a click picks. A session id can still be pasted (the #caller field).

import { timeElement } from "./when.js";

const $ = (id) => document.getElementById(id);

function matches(c, words) {
  const hay = `${c.title || ""} ${c.cwd || ""} ${c.source_agent || "dsh"} ${c.id}`.toLowerCase();
  return words.every((w) => hay.includes(w));
}

function choice(c, ctx) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "caller-choice";
  b.dataset.id = c.id;
  if (c.id === ctx.callerId) b.setAttribute("aria-current", "true");
  const title = document.createElement("span");
  title.className = "title";
  title.textContent = c.title || "untitled";
  const sub = document.createElement("span");
  sub.className = "sub";
  sub.append(`${c.source_agent || "dsh"} · `, timeElement(c.created_at), ` · ${c.id.slice(0, 8)}`);
  if (c.live) sub.append(" · live");
  if (c.subagent) sub.append(" · subagent");
  b.append(title, sub);
  return b;
}

// The candidates, grouped by workspace in the server's order, those matching the filter.
export function renderCandidates(ctx) {
  const words = $("caller-filter").value.toLowerCase().split(/\s+/).filter(Boolean);
  const groups = new Map();
  for (const c of ctx.candidates) {
    if (!matches(c, words)) continue;
    const key = c.cwd || "(no workspace)";
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(c);
  }
  const list = $("caller-list");
  list.replaceChildren(...[...groups].map(([cwd, members]) => {
    const li = document.createElement("li");
    const h = document.createElement("h3");
    h.textContent = cwd;
    const ul = document.createElement("ul");
    ul.append(...members.map((c) => { const item = document.createElement("li"); item.append(choice(c, ctx)); return item; }));
    li.append(h, ul);
    return li;
  }));
  $("caller-count").textContent = `${list.querySelectorAll(".caller-choice").length} of ${ctx.candidates.length} sessions`;
}

export function wirePicker(ctx, pick) {
  const dialog = $("caller-dialog");
  $("caller-button").addEventListener("click", () => {
    renderCandidates(ctx);
    dialog.showModal();
    $("caller-filter").focus();
  });
  $("caller-filter").addEventListener("input", () => renderCandidates(ctx));
  const buttons = () => [...$("caller-list").querySelectorAll(".caller-choice")];
  dialog.addEventListener("keydown", (e) => {
    const all = buttons();
    const at = all.indexOf(document.activeElement);
    if (e.key === "ArrowDown" && all.length) { e.preventDefault(); all[(at + 1) % all.length].focus(); }
    else if (e.key === "ArrowUp" && all.length) { e.preventDefault(); all[(at - 1 + all.length) % all.length].focus(); }
    else if (e.key === "Enter" && e.target === $("caller-filter") && all.length) {
      e.preventDefault();
      all[0].click();
    }
  });
  $("caller-list").addEventListener("click", (e) => {
    const b = e.target instanceof Element ? e.target.closest(".caller-choice") : null;
    if (!b) return;
    dialog.close();
    pick(b.dataset.id);
  });
  $("caller-close").addEventListener("click", () => dialog.close());
}
