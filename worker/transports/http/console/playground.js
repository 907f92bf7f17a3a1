// The playground: any of the five tools with raw JSON arguments, as the model would send
// them, and the exact text the model sees (with links, textContent unchanged).

import { callTool, getJSON } from "./api.js";
import { renderAnswer } from "./links.js";

const $ = (id) => document.getElementById(id);

// A word the sessions of every demo workspace contain (make run's corpus; checked by
// tests/serve/test_console_api.py), and a likely one in any coding agent's history.
export const DEFAULT_QUERY = "tests";

let argsEdited = false;
let descriptions = new Map();

// An example call of `tool` for the caller: its workspace's other sessions as targets.
function example(ctx, tool) {
  const c = ctx.byId.get(ctx.callerId) || null;
  const peers = c && c.cwd ? ctx.sessions.filter((s) => s.id !== c.id) : [];
  const peer = peers.find((s) => !s.parent) || peers[0] || null;
  const child = peers.find((s) => s.parent && s.parent !== "[outside workspace]") || null;
  const target = peer || c;
  const last = target && typeof target.last_seq === "number" ? target.last_seq : 0;
  const seq = Math.min(2, last);
  switch (tool) {
    case "session_search":
      return { query: DEFAULT_QUERY };
    case "session_event_search":
      return peer ? { session_id: peer.id, query: DEFAULT_QUERY } : { query: DEFAULT_QUERY };
    case "session_trace":
      return child ? { session_id: child.id } : {};
    case "session_event_trace":
      return peer ? { session_id: peer.id, seq } : { seq };
    case "session_event_read":
      return peer ? { session_id: peer.id, seq, before: 1, after: 2 } : { seq, after: 2 };
    default:
      return {};
  }
}

export function fillExample(ctx) {
  $("arguments").value = JSON.stringify(example(ctx, $("tool").value), null, 2);
  argsEdited = false;
}

// The caller or its workspace changed: a new example unless the user wrote their own.
export function callerChanged(ctx) {
  const c = ctx.byId.get(ctx.callerId);
  $("step-seq").placeholder = c && typeof c.last_step_seq === "number"
    ? `${c.last_step_seq} (last step/start)` : "none";
  if (!argsEdited) fillExample(ctx);
}

function showDescription() {
  $("tool-description").textContent = descriptions.get($("tool").value) || "";
}

export async function loadDescriptions() {
  try {
    const { status, body } = await getJSON("/v1/manifest");
    if (status !== 200 || !body) return;
    descriptions = new Map((body.tools || []).map((t) => [t.name, t.description]));
    showDescription();
  } catch (_) { /* descriptions are a nicety */ }
}

function show(text, state, code) {
  const out = $("output");
  out.textContent = text;
  out.dataset.state = state;
  const codeLine = $("output-code");
  codeLine.textContent = code ? `code: ${code}` : "";
  codeLine.hidden = !code;
}

async function runCall(ctx, event) {
  if (event) event.preventDefault();
  let args;
  try {
    args = JSON.parse($("arguments").value.trim() || "{}");
  } catch (err) {
    show(`Arguments are not valid JSON: ${err.message}`, "error", "LOCAL_INVALID_JSON");
    $("arguments").focus();
    return;
  }
  const caller = ctx.callerArg();
  const stepText = $("step-seq").value.trim();
  if (stepText !== "") {
    const step = Number(stepText);
    if (!Number.isInteger(step) || step < 0) {
      show("Step seq must be a non-negative integer.", "error", "LOCAL_INVALID_STEP");
      $("step-seq").focus();
      return;
    }
    caller.step_seq = step;
  }
  const tool = $("tool").value;
  const run = $("run");
  run.disabled = true;
  $("output").dataset.state = "running";
  $("run-meta").textContent = "running…";
  const started = performance.now();
  const answer = await callTool(tool, args, caller);
  const ms = Math.round(performance.now() - started);
  $("reply-json").textContent = answer.reply ? JSON.stringify(answer.reply, null, 2) : "";
  if (answer.ok) {
    const target = args && typeof args === "object" && typeof args.session_id === "string"
      ? args.session_id : caller.session_id;
    const { fragment } = renderAnswer(tool, answer.text, { target, known: ctx.known });
    show("", "ok", null);
    $("output").replaceChildren(fragment);
  } else {
    show(answer.message, "error", answer.code);
  }
  $("run-meta").textContent = answer.code === "NETWORK" ? "" : `${tool} · ${ms} ms`;
  run.disabled = false;
}

export function wirePlayground(ctx) {
  $("call-form").addEventListener("submit", (e) => runCall(ctx, e));
  $("tool").addEventListener("change", () => { showDescription(); fillExample(ctx); });
  $("arguments").addEventListener("input", () => { argsEdited = true; });
  $("arguments").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) runCall(ctx, e);
  });
}
