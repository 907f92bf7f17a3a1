// Links in tool answers. Every session id and event reference in a tool's text becomes a
// link into the browse view, while the text stays byte for byte the tool's: the rendered
// answer is text nodes and <a> elements whose textContent is exactly the answer. Nothing
// here parses text as markup: tool answers quote session logs written by agents.
//
// Two rules find the references:
// 1. Structure. The line formats of the five tools (SPEC §10, worker/tools/render.py)
//    put references in fixed places, and only those places are read:
//    - every targeted tool's first line `Session <target> — <title>`;
//    - session_search: a block `<i>. Session <id> — …` then the fields Created, Source
//      agent (optional), Parent, Availability, Best match, Snippet in that order —
//      `Parent: <id>` (not `root`, not `[outside workspace]`) and `Best match: seq <n> |`
//      are linked only as the expected next field of a block, so a title that spans lines
//      cannot pose as one;
//    - session_event_search: `<i>. seq <n> | …` (events of the target);
//    - session_trace: under `Ancestors (nearest first):` and `Descendants:`, the lines
//      `<indent>- <id> — …` (the markers `- none…` and `- [outside workspace …]` have no
//      id);
//    - session_event_trace: `Target: seq <n> |`, `Replaced by: <n>` and the four seq lists;
//    - session_event_read: `Target event seq <n>:` and, after the JSON fence, the
//      neighbours' `- seq <n> | …` (their text lines are indented, never matched).
//    An id is what stands before the first ` — ` of its line (the title follows it).
// 2. Known ids. Anywhere else (snippets, titles, the raw event JSON), an id of a session
//    in the caller's workspace list, standing as a whole token (no letter, digit, `_` or
//    `-` on either side).
// A link to a session outside the workspace is harmless: the tools answer it with their
// own refusal.

export const sessionHref = (id) => `#/s/${encodeURIComponent(id)}`;
export const eventHref = (id, seq) => `#/s/${encodeURIComponent(id)}/e/${seq}`;
// The transcript of `id`, landing on event `seq` when given.
export const transcriptHref = (id, seq) =>
  seq === undefined || seq === null ? sessionHref(id) : `#/s/${encodeURIComponent(id)}/t/${seq}`;

const SEARCH_FIELDS = ["Created", "Source agent", "Parent", "Availability", "Best match", "Snippet"];
const OPTIONAL_FIELDS = new Set(["Source agent"]);
const SEQ_LISTS = [
  "Replacement chain: ", "Events replaced by target: ",
  "Events cited directly as sources: ", "Direct derived events: ",
];
const NO_PARENT = new Set(["root", "[outside workspace]"]);

// The index of the field `line` holds when `next` is the one expected, else -1.
function searchField(line, next) {
  for (let k = next; k < SEARCH_FIELDS.length; k++) {
    if (line.startsWith(`   ${SEARCH_FIELDS[k]}: `)) return k;
    if (!OPTIONAL_FIELDS.has(SEARCH_FIELDS[k])) return -1;
  }
  return -1;
}

// The hits of a session_search answer, its fields read in their order as the links read
// them: [{id, title, seq, snippet}] in rank order.
export function searchHits(text) {
  const hits = [];
  let hit = null;
  let next = 0;
  for (const line of String(text).split("\n")) {
    const head = /^\d+\. Session (.+?) — (.*)$/.exec(line);
    if (head) {
      hit = { id: head[1], title: head[2], seq: null, snippet: "" };
      hits.push(hit);
      next = 0;
      continue;
    }
    if (hit === null) continue;
    const k = searchField(line, next);
    if (k < 0) continue;
    next = k + 1;
    const value = line.slice(SEARCH_FIELDS[k].length + 5);
    if (SEARCH_FIELDS[k] === "Best match") {
      const m = /^seq (\d+) \| /.exec(value);
      if (m) hit.seq = Number(m[1]);
    }
    if (SEARCH_FIELDS[k] === "Snippet") {
      hit.snippet = value;
      hit = null;
    }
  }
  return hits;
}

// The id of a `Session <id> — <title>` first line (the requested target when it fits).
function headerId(line, target) {
  if (target && line.startsWith(`Session ${target} — `)) return target;
  const m = /^Session (.+?) — /.exec(line);
  return m ? m[1] : null;
}

// A line parser per tool: (line, at(column, length, session, seq?)) => void, with state.
function parserFor(tool, target) {
  let lineNo = -1;
  let session = target || null; // the session the answer is about
  const first = (line, at) => {
    const id = headerId(line, target);
    if (id !== null) { session = id; at(8, id.length, id); }
  };
  switch (tool) {
    case "session_search": {
      let block = null;
      let next = 0;
      return (line, at) => {
        const head = /^(\d+)\. Session (.+?) — /.exec(line);
        if (head) {
          block = head[2];
          next = 0;
          at(head[1].length + 10, block.length, block);
          return;
        }
        if (block === null) return;
        const k = searchField(line, next);
        if (k < 0) return;
        next = k + 1;
        const col = SEARCH_FIELDS[k].length + 5;
        const value = line.slice(col);
        if (SEARCH_FIELDS[k] === "Parent" && !NO_PARENT.has(value)) at(col, value.length, value);
        if (SEARCH_FIELDS[k] === "Best match") {
          const m = /^seq (\d+) \| /.exec(value);
          if (m) at(col, 4 + m[1].length, block, Number(m[1]));
        }
        if (SEARCH_FIELDS[k] === "Snippet") block = null;
      };
    }
    case "session_event_search":
      return (line, at) => {
        if (++lineNo === 0) return first(line, at);
        const m = /^(\d+)\. seq (\d+) \| /.exec(line);
        if (m && session !== null) at(m[1].length + 2, 4 + m[2].length, session, Number(m[2]));
      };
    case "session_trace": {
      let section = false;
      return (line, at) => {
        if (++lineNo === 0) return first(line, at);
        if (line === "Ancestors (nearest first):" || line === "Descendants:") {
          section = true;
          return;
        }
        const m = section ? /^( *)- (.+?) — /.exec(line) : null;
        if (m) at(m[1].length + 2, m[2].length, m[2]);
      };
    }
    case "session_event_trace":
      return (line, at) => {
        if (++lineNo === 0) return first(line, at);
        if (session === null) return;
        let m = /^Target: seq (\d+) \| /.exec(line);
        if (m) return at(8, 4 + m[1].length, session, Number(m[1]));
        m = /^Replaced by: (\d+)$/.exec(line);
        if (m) return at(13, m[1].length, session, Number(m[1]));
        const label = SEQ_LISTS.find((l) => line.startsWith(l));
        if (!label) return;
        for (const n of line.slice(label.length).matchAll(/\d+/g)) {
          at(label.length + n.index, n[0].length, session, Number(n[0]));
        }
      };
    case "session_event_read": {
      let fence = "before"; // before → inside → after the target's JSON block
      return (line, at) => {
        if (++lineNo === 0) return first(line, at);
        if (session === null) return;
        if (fence === "before") {
          const m = /^Target event seq (\d+):$/.exec(line);
          if (m) at(13, 4 + m[1].length, session, Number(m[1]));
          if (line === "```json") fence = "inside";
        } else if (fence === "inside") {
          if (line === "```") fence = "after";
        } else {
          const m = /^- seq (\d+) \| /.exec(line);
          if (m) at(2, 4 + m[1].length, session, Number(m[1]));
        }
      };
    }
    default:
      return () => {};
  }
}

const patterns = new WeakMap();
function knownPattern(known) {
  if (!known || known.size === 0) return null;
  if (!patterns.has(known)) {
    const ids = [...known].sort((a, b) => b.length - a.length)
      .map((id) => id.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&"));
    patterns.set(known, new RegExp(`(?<![\\w-])(?:${ids.join("|")})(?![\\w-])`, "g"));
  }
  return patterns.get(known);
}

// The references of a tool answer: [{start, end, session, seq?}] in text order.
export function references(tool, text, { target = null, known = null } = {}) {
  const found = [];
  const parse = parserFor(tool, target);
  let offset = 0;
  for (const line of text.split("\n")) {
    parse(line, (col, length, session, seq) => {
      if (length > 0) found.push({ start: offset + col, end: offset + col + length, session, seq });
    });
    offset += line.length + 1;
  }
  const pattern = knownPattern(known);
  if (pattern !== null) {
    let from = 0;
    const gaps = [];
    for (const r of found) { gaps.push([from, r.start]); from = r.end; }
    gaps.push([from, text.length]);
    for (const [start, end] of gaps) {
      const gap = text.slice(start, end);
      for (const m of gap.matchAll(pattern)) {
        found.push({ start: start + m.index, end: start + m.index + m[0].length, session: m[0] });
      }
    }
    found.sort((a, b) => a.start - b.start);
  }
  return found;
}

// A link for `ref`: an event opens its session_event_read, or with `landing` the
// transcript at that event (a search hit lands where it matched).
export function referenceLink(text, ref, landing = false) {
  const a = document.createElement("a");
  a.textContent = text;
  a.dataset.session = ref.session;
  if (ref.seq === undefined) {
    a.href = sessionHref(ref.session);
  } else {
    a.href = landing ? transcriptHref(ref.session, ref.seq) : eventHref(ref.session, ref.seq);
    a.dataset.seq = String(ref.seq);
  }
  return a;
}

// The answer as DOM nodes (text and links) and its references.
export function renderAnswer(tool, text, options) {
  const refs = references(tool, text, options);
  const fragment = document.createDocumentFragment();
  let at = 0;
  for (const ref of refs) {
    if (ref.start > at) fragment.append(text.slice(at, ref.start));
    fragment.append(referenceLink(text.slice(ref.start, ref.end), ref, Boolean(options && options.landing)));
    at = ref.end;
  }
  if (at < text.length) fragment.append(text.slice(at));
  return { fragment, refs };
}
