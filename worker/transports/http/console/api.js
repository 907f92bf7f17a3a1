// The console's only way to the server: JSON over fetch, with the bearer token of this tab.
//
// A token arrives once in the page URL (?token=, the one place a browser can carry it when
// the page is opened); it is moved into this tab's sessionStorage and off the address bar
// before anything else runs. Every request sends it as Authorization: Bearer.

const TOKEN_KEY = "sessionq.token";

const storage = {
  get(key) { try { return sessionStorage.getItem(key) || ""; } catch (_) { return ""; } },
  set(key, value) { try { sessionStorage.setItem(key, value); } catch (_) { /* private mode */ } },
};

export function takeTokenFromUrl() {
  const params = new URLSearchParams(location.search);
  if (!params.has("token")) return;
  storage.set(TOKEN_KEY, params.get("token") || "");
  params.delete("token"); // off the address bar and out of the history
  const rest = params.toString();
  history.replaceState(null, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
}

export const token = {
  get: () => storage.get(TOKEN_KEY),
  set: (value) => storage.set(TOKEN_KEY, value.trim()),
};

// Listeners told about every 401 (the page shows where to enter the token).
const unauthorizedListeners = [];
export function onUnauthorized(listener) { unauthorizedListeners.push(listener); }

export async function getJSON(url, init) {
  const options = Object.assign({ cache: "no-store" }, init || {});
  const bearer = token.get();
  if (bearer) {
    options.headers = Object.assign({}, options.headers || {}, { authorization: `Bearer ${bearer}` });
  }
  const resp = await fetch(url, options);
  let body = null;
  try { body = await resp.json(); } catch (_) { body = null; }
  if (resp.status === 401) unauthorizedListeners.forEach((listener) => listener());
  return { status: resp.status, body };
}

// A text answer (an export); an error answer's message as its text.
export async function getText(url) {
  const headers = {};
  const bearer = token.get();
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  try {
    const resp = await fetch(url, { cache: "no-store", headers });
    const text = await resp.text();
    if (resp.status === 401) unauthorizedListeners.forEach((listener) => listener());
    if (resp.ok) return { status: resp.status, text };
    let message = text;
    try { message = JSON.parse(text).error.message; } catch (_) { /* as sent */ }
    return { status: resp.status, text: message };
  } catch (err) {
    return { status: 0, text: `Request failed: ${err.message}` };
  }
}

// One tool call through POST /v1/call. The answer is always an object:
// {ok: true, text, reply} or {ok: false, code, message, reply}.
export async function callTool(tool, args, caller) {
  let status;
  let reply;
  try {
    ({ status, body: reply } = await getJSON("/v1/call", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tool, arguments: args, caller }),
    }));
  } catch (err) {
    return { ok: false, code: "NETWORK", message: `Request failed: ${err.message}`, reply: null };
  }
  if (status !== 200 || !reply) {
    const e = (reply && reply.error) || {};
    return {
      ok: false, code: e.code || `HTTP_${status}`,
      message: `HTTP ${status}: ${e.message || "request failed"}`, reply,
    };
  }
  if (reply.ok) return { ok: true, text: String(reply.text), reply };
  const e = reply.error || {};
  return { ok: false, code: e.code, message: `Error: ${e.message}`, reply };
}

// An HTTP error answer of the API as one line.
export function httpError(status, body) {
  const e = (body && body.error) || {};
  return `HTTP ${status}${e.message ? ": " + e.message : ""}`;
}
