// The search palette: Ctrl+K (or / outside a text field) opens it anywhere; typing runs
// session_search as the caller; ↑/↓ choose a hit, Enter opens its transcript at the event
// that matched, Esc closes. Hits are read from the tool's text (SPEC §10.1: a block per
// session, its `Best match: seq N |` and `Snippet:` fields); the matched words are marked.

import { callTool } from "./api.js";
import { markTerms } from "./highlight.js";
import { searchHits, transcriptHref } from "./links.js";

const $ = (id) => document.getElementById(id);
const DELAY_MS = 200;

let generation = 0;
let timer = null;

function options() { return [...$("palette-results").querySelectorAll("[role=option]")]; }

function select(index) {
  const all = options();
  all.forEach((o, i) => o.setAttribute("aria-selected", String(i === index)));
  if (all[index]) {
    all[index].scrollIntoView({ block: "nearest" });
    $("palette-query").setAttribute("aria-activedescendant", all[index].id);
  }
}

function selected() { return options().findIndex((o) => o.getAttribute("aria-selected") === "true"); }

function hitOption(hit, i, query) {
  const li = document.createElement("li");
  li.id = `palette-hit-${i}`;
  li.setAttribute("role", "option");
  const a = document.createElement("a");
  a.href = transcriptHref(hit.id, hit.seq);
  a.dataset.session = hit.id;
  if (hit.seq !== null) a.dataset.seq = String(hit.seq);
  a.tabIndex = -1;
  const title = document.createElement("span");
  title.className = "title";
  title.textContent = hit.title || hit.id;
  const snippet = document.createElement("span");
  snippet.className = "snippet";
  snippet.textContent = hit.snippet;
  markTerms(snippet, query);
  a.append(title, snippet);
  li.append(a);
  return li;
}

async function run(ctx, query) {
  const gen = ++generation;
  const list = $("palette-results");
  const status = $("palette-status");
  if (!query) { list.replaceChildren(); status.textContent = ""; return; }
  status.textContent = "Searching…";
  list.dataset.state = "running";
  const answer = await callTool("session_search", { query }, ctx.callerArg());
  if (gen !== generation) return;
  if (!answer.ok) {
    list.replaceChildren();
    status.textContent = answer.message;
    list.dataset.state = "error";
    return;
  }
  const hits = searchHits(answer.text);
  list.replaceChildren(...hits.map((h, i) => hitOption(h, i, query)));
  status.textContent = hits.length ? "↑↓ choose · Enter opens · Esc closes" : "No session matches.";
  list.dataset.state = "ok";
  list.dataset.query = query;
  select(0);
}

export function openPalette() {
  const dialog = $("palette");
  if (dialog.open) return;
  dialog.showModal();
  $("palette-query").select();
}

function isTyping(target) {
  return target instanceof HTMLElement
    && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
}

export function wirePalette(ctx, navigate) {
  const input = $("palette-query");
  document.addEventListener("keydown", (e) => {
    if ((e.key === "k" || e.key === "K") && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      openPalette();
    } else if (e.key === "/" && !isTyping(e.target) && !$("palette").open) {
      e.preventDefault();
      openPalette();
    }
  });
  $("palette-open").addEventListener("click", openPalette);
  input.addEventListener("input", () => {
    clearTimeout(timer);
    const q = input.value.trim();
    timer = setTimeout(() => run(ctx, q), DELAY_MS);
  });
  input.addEventListener("keydown", (e) => {
    const n = options().length;
    if (e.key === "ArrowDown" && n) { e.preventDefault(); select((selected() + 1) % n); }
    else if (e.key === "ArrowUp" && n) { e.preventDefault(); select((selected() - 1 + n) % n); }
    else if (e.key === "Enter") {
      e.preventDefault();
      const chosen = options()[Math.max(0, selected())];
      const q = input.value.trim();
      if (chosen) navigate(chosen.querySelector("a").getAttribute("href"), true);
      else if (q) navigate(`#/search/${encodeURIComponent(q)}`, true);
      else return;
      $("palette").close();
    }
  });
  $("palette-results").addEventListener("click", (e) => {
    if (e.target instanceof Element && e.target.closest("a")) $("palette").close();
  });
}
