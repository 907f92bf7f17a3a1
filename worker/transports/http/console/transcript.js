// A session read as a conversation (GET /v1/transcript, worker/reader): messages rendered
// from their Markdown trees, thinking and tool calls folded (input and output one click
// away), subagents one click from the call that started them, and every block's event
// `seq` a link to its exact session_event_read. Pages load as the reader scrolls: the
// first paint needs one page, whatever the session's length.

import { getJSON, httpError } from "./api.js";
import { el, sessionLink } from "./dom.js";
import { eventHref } from "./links.js";
import { appendTree } from "./markdown.js";
import { timeElement } from "./when.js";

const $ = (id) => document.getElementById(id);
const PAGE = 200;
const LEAD = 30; // events shown above a landing event
const MARGIN_PX = 600; // the next page is asked for this far before the end shows

let generation = 0;
let shown = null; // {id, first, next, after, before, observer}: after/before = a page on its way

function seqLink(id, seq) {
  const a = el("a", "seq", `#${seq}`);
  a.href = eventHref(id, seq);
  a.title = `session_event_read of seq ${seq}`;
  return a;
}

function head(block, id, who, ...extra) {
  const h = el("header", "block-head");
  h.append(el("span", "who", who), ...extra, timeElement(block.time), seqLink(id, block.seq));
  return h;
}

function words(text) {
  const n = (text.match(/\S+/g) || []).length;
  return `${n} word${n === 1 ? "" : "s"}`;
}

function firstLine(text, size = 90) {
  const line = (text || "").split("\n").find((l) => l.trim()) || "";
  return line.length > size ? `${line.slice(0, size)}…` : line;
}

// A call's input in one line: `key: value` pairs of a JSON object, else its first line.
function gist(input, size = 110) {
  let line = "";
  try {
    const value = JSON.parse(input);
    line = value && typeof value === "object" && !Array.isArray(value)
      ? Object.entries(value).map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join("  ")
      : JSON.stringify(value);
  } catch (_) {
    line = firstLine(input, size);
  }
  line = line.replace(/\s+/g, " ");
  return line.length > size ? `${line.slice(0, size)}…` : line;
}

function fill(result, details, id) {
  const out = details.querySelector(".tool-output");
  out.replaceChildren();
  const label = el("div", "io-label", result.is_error ? `Error${result.error ? ` (${result.error})` : ""}` : "Output");
  label.append(" ", seqLink(id, result.seq));
  const pre = el("pre", result.is_error ? "io error" : "io", result.text || "(no text)");
  out.append(label, pre);
  const status = details.querySelector(".status");
  status.textContent = result.is_error ? "error" : "done";
  status.className = `status ${result.is_error ? "err" : "ok"}`;
  details.dataset.result = String(result.seq);
}

function toolBlock(block, id) {
  const d = el("details", "block tool");
  if (block.call_id) d.dataset.callId = block.call_id;
  const summary = el("summary");
  const name = el("span", "tool-name", block.name || "tool result");
  summary.append(name, el("span", "gist", gist(block.input || "")), el("span", "status pending", "no result yet"), timeElement(block.time), seqLink(id, block.seq));
  d.append(summary);
  if (block.input !== null && block.input !== undefined) {
    d.append(el("div", "io-label", "Input"), el("pre", "io", block.input));
  }
  d.append(el("div", "tool-output"));
  if (block.result) fill(block.result, d, id);
  if (block.child) {
    summary.append(
      sessionLink(block.child.id, `Subagent: ${block.child.title || block.child.id} →`, "child-link"));
  }
  return d;
}

function folded(className, label, text, block, id) {
  const d = el("details", `block ${className}`);
  const summary = el("summary");
  summary.append(el("span", "who", label), timeElement(block.time), seqLink(id, block.seq));
  d.append(summary, el("div", "folded-text", text));
  return d;
}

function renderBlock(block, id, list) {
  let node;
  switch (block.kind) {
    case "user":
    case "assistant":
    case "partial": {
      node = el("article", `block msg ${block.kind}`);
      const extra = [];
      if (block.model) extra.push(el("span", "model", block.model));
      if (block.usage) {
        const u = block.usage;
        extra.push(el("span", "usage", `${u.inputTokens ?? "?"} in · ${u.outputTokens ?? "?"} out tokens`));
      }
      if (block.interrupted || block.kind === "partial") extra.push(el("span", "tag", "interrupted"));
      node.append(head(block, id, block.kind === "user" ? "User" : "Assistant", ...extra));
      const body = el("div", "md");
      if (Array.isArray(block.md)) appendTree(body, block.md);
      else body.append(el("p", "meta", `An interrupted stream of ${block.deltas} deltas: read its events.`));
      node.append(body);
      break;
    }
    case "thinking":
      node = folded("thinking", `Thinking · ${words(block.text)}`, block.text, block, id);
      break;
    case "context":
      node = folded("context", `Context from ${block.source || "a plugin"} · ${words(block.text)}`, block.text, block, id);
      break;
    case "tool": {
      const open = block.name === null && block.call_id
        ? list.querySelector(`details.tool[data-call-id="${CSS.escape(block.call_id)}"]:not([data-result])`)
        : null;
      if (open) { fill(block.result, open, id); return; }
      node = toolBlock(block, id);
      break;
    }
    case "note":
      node = el("p", "block note", block.text);
      node.append(" ", seqLink(id, block.seq));
      break;
    default: { // meta: a run of events with nothing to read
      node = el("p", "block meta");
      const range = block.last > block.seq ? `seq ${block.seq}–${block.last}` : `seq ${block.seq}`;
      node.append(`${block.count} event${block.count === 1 ? "" : "s"} · ${block.types.join(", ")} · `);
      const a = seqLink(id, block.seq);
      a.textContent = range;
      node.append(a);
      node.dataset.last = String(block.last);
    }
  }
  node.dataset.seq = String(block.seq);
  list.append(node);
}

function renderFacts(facts) {
  $("detail-title").textContent = facts.title || "untitled";
  const line = $("transcript-facts");
  line.replaceChildren();
  const add = (...nodes) => { if (line.childNodes.length) line.append(" · "); line.append(...nodes); };
  add(facts.source_agent || "dsh");
  add(timeElement(facts.created_at));
  add(`${facts.last_seq + 1} events`);
  add(facts.cwd || "no workspace");
  if (facts.parent === "[outside workspace]") add("parent outside the workspace");
  else if (facts.parent) {
    add("parent ", sessionLink(facts.parent, `↑ ${facts.parent_title || facts.parent}`, "parent-link"));
  }
  const kids = $("transcript-children");
  kids.replaceChildren(...facts.children.map((c) => {
    const li = el("li");
    li.append(sessionLink(c.id, c.title || c.id), " ", el("span", "meta", c.source_agent || "dsh"), " ", timeElement(c.created_at));
    return li;
  }));
  $("transcript-children-box").hidden = facts.children.length === 0;
}

function treeText(nodes) {
  return (nodes || []).map((n) => (typeof n === "string" ? n : treeText(n[2]))).join("");
}

// A title is the first prompt's first words: the prompt's first line, when it says
// more, is shown under it (a title cut mid-sentence still reads whole here).
function showPrompt(body) {
  const line = $("transcript-prompt");
  line.hidden = true;
  if (body.from !== 0) return;
  const first = body.blocks.find((b) => b.kind === "user");
  if (!first) return;
  const text = treeText(first.md).split("\n").find((l) => l.trim()) || "";
  const title = body.session.title || "";
  if (text.trim() === title.trim() || text.length <= title.length) return;
  line.textContent = text.length > 240 ? `${text.slice(0, 240)}…` : text;
  line.hidden = false;
}

async function loadPage(ctx, from, gen, where, limit = PAGE) {
  const url = `/v1/transcript?caller=${encodeURIComponent(ctx.callerId)}&session=${encodeURIComponent(shown.id)}&from=${from}&limit=${limit}`;
  const { status, body } = await getJSON(url);
  if (gen !== generation) return null;
  const list = $("transcript");
  if (status !== 200 || !body || !Array.isArray(body.blocks)) {
    list.dataset.state = "error";
    $("transcript-error").textContent = httpError(status, body);
    $("transcript-error").hidden = false;
    return null;
  }
  const page = document.createDocumentFragment();
  const holder = el("div");
  for (const block of body.blocks) renderBlock(block, shown.id, where === "before" ? holder : list);
  if (where === "before") {
    page.append(...holder.childNodes);
    list.prepend(page);
  }
  return body;
}

// The block holding event `seq` (a meta run holds a range), else the nearest before it.
function blockAt(seq) {
  let best = null;
  for (const node of $("transcript").children) {
    const first = Number(node.dataset.seq);
    const last = Number(node.dataset.last ?? node.dataset.result ?? first);
    if (first <= seq && seq <= last) return node;
    if (first <= seq) best = node;
  }
  return best;
}

function land(seq) {
  for (const old of document.querySelectorAll("#transcript .landed")) old.classList.remove("landed");
  const node = blockAt(seq);
  if (!node) return;
  node.classList.add("landed");
  if (node.tagName === "DETAILS") node.open = true;
  node.scrollIntoView({ block: "center" });
  $("transcript").dataset.landed = node.dataset.seq;
}

async function more(ctx, gen) {
  if (!shown || shown.after || shown.next === null) return;
  shown.after = true;
  const body = await loadPage(ctx, shown.next, gen, "after");
  if (!body || gen !== generation) return;
  shown.next = body.next;
  shown.after = false;
  $("transcript").dataset.next = String(body.next ?? "");
  $("transcript-end").textContent = body.next === null ? "End of the session." : "Loading…";
  // the observer speaks on a change only: a page too short to push the end away asks again
  requestAnimationFrame(() => { if (nearEnd()) more(ctx, gen); });
}

function nearEnd() {
  return $("transcript-end").getBoundingClientRect().top < innerHeight + MARGIN_PX;
}

async function earlier(ctx, gen) {
  if (!shown || shown.before || shown.first <= 0) return;
  shown.before = true;
  const from = Math.max(0, shown.first - PAGE);
  const body = await loadPage(ctx, from, gen, "before", shown.first - from);
  if (!body || gen !== generation) return;
  shown.first = from;
  shown.before = false;
  $("transcript-earlier").hidden = from <= 0;
  $("transcript").dataset.first = String(from);
}

// Show session `id`'s transcript; `seq` (or null) is the event to land on.
export async function showTranscript(ctx, id, seq) {
  const list = $("transcript");
  if (shown && shown.id === id && seq !== null && blockAt(seq) && Number(list.dataset.first) <= seq
      && (shown.next === null || seq < shown.next)) {
    land(seq);
    return;
  }
  const gen = ++generation;
  if (shown && shown.observer) shown.observer.disconnect();
  const first = seq === null ? 0 : Math.max(0, seq - LEAD);
  shown = { id, first, next: null, after: true, before: false, observer: null };
  list.replaceChildren();
  list.dataset.state = "running";
  list.dataset.session = id;
  list.dataset.first = String(first);
  delete list.dataset.landed;
  $("transcript-error").hidden = true;
  $("transcript-earlier").hidden = first <= 0;
  const body = await loadPage(ctx, first, gen, "after");
  if (!body) return;
  renderFacts(body.session);
  shown.next = body.next;
  shown.after = false;
  list.dataset.next = String(body.next ?? "");
  list.dataset.state = "ok";
  $("transcript-end").textContent = body.next === null ? "End of the session." : "Loading…";
  showPrompt(body);
  if (seq !== null) land(seq);
  shown.observer = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) more(ctx, gen);
  }, { rootMargin: `${MARGIN_PX}px` });
  shown.observer.observe($("transcript-end"));
}

export function wireTranscript(ctx) {
  $("transcript-earlier").addEventListener("click", () => earlier(ctx, generation));
}

export function forgetTranscript() {
  generation++;
  if (shown && shown.observer) shown.observer.disconnect();
  shown = null;
}
