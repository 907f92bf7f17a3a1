/**
 * Reading a dsh session log (`session.jsonl`): line 1 is the header
 * (`{"type":"session", ...}`), every later line an event, or a packed chunk row that
 * stands for a run of `assistant/chunk` deltas (`text-chunks`, `reasoning-chunks`,
 * `tool-call-chunks`: SPEC §1.5), expanded exactly as sessionq expands it
 * (indexer/logs/chunks.py: member k is seq0 + k, at time0 + dt[0] + … + dt[k-1]).
 *
 * Events keep their bytes: a plain event line is passed on as written (key order,
 * escapes and all), so the store holds what dsh wrote. The envelope (`type`, safe
 * integer `seq` and `time`) and contiguity from seq 0 are checked here; a log that breaks
 * them is rejected whole, naming the line, and sends nothing. Surface rules (SPEC §2) are
 * the indexer's to check (a dead letter). A `.jsonl.zstd` log needs a Node with zstd in
 * `node:zlib` (22.15 and later).
 */
import { readFile } from "node:fs/promises";
import * as zlib from "node:zlib";

export interface LogEvent {
  seq: number;
  /** The event's JSON text, as stored. */
  raw: string;
}

export interface ReadLog {
  header: Record<string, unknown>;
  events: LogEvent[];
  /** Characters of the text read (complete lines only): where a follower resumes. */
  consumed: number;
}

export class LogRejectedError extends Error {
  override readonly name = "LogRejectedError";
  constructor(readonly path: string, readonly line: number, why: string) {
    super(`${path}:${line}: ${why}`);
  }
}

const ROWS: Record<string, string> = {
  "text-chunks": "text-delta",
  "reasoning-chunks": "reasoning-delta",
  "tool-call-chunks": "tool-call-delta",
};

const isSafeInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v);
const isNumber = (v: unknown): boolean => typeof v === "number" && Number.isFinite(v);

function sameKeys(obj: Record<string, unknown>, keys: string[]): boolean {
  const own = Object.keys(obj);
  return own.length === keys.length && keys.every((k) => k in obj);
}

/** A packed chunk row's member events (their JSON texts), or why the row is malformed. */
export function expandRow(row: Record<string, unknown>): string[] | string {
  const tag = String(row["type"]);
  const bad = (why: string) => `malformed ${tag} storage row: ${why}`;
  if (!sameKeys(row, ["type", "seq0", "time0", "data"])) return bad("envelope must be exactly {type, seq0, time0, data}");
  const { seq0, time0, data } = row as { seq0: unknown; time0: unknown; data: unknown };
  if (!isSafeInt(seq0) || seq0 < 0) return bad("seq0 must be a non-negative safe integer");
  if (!isSafeInt(time0)) return bad("time0 must be a safe integer");
  if (data === null || typeof data !== "object") return bad("data must be an object");
  const d = data as Record<string, unknown>;
  const tool = tag === "tool-call-chunks";
  const named = tool && !Array.isArray(d) && sameKeys(d, ["turn", "step", "index", "id", "name", "dt", "args"]);
  if (tool) {
    if (Array.isArray(d) || !(named || sameKeys(d, ["turn", "step", "index", "id", "dt", "args"]))) {
      return bad("data must be exactly {turn, step, index, id, name?, dt, args}");
    }
    if (typeof d["id"] !== "string" || (named && typeof d["name"] !== "string")) return bad("id (and name when present) must be strings");
  } else if (Array.isArray(d) || !sameKeys(d, ["turn", "step", "index", "dt", "texts"])) {
    return bad("data must be exactly {turn, step, index, dt, texts}");
  }
  if (!(isNumber(d["turn"]) && isNumber(d["step"]) && isNumber(d["index"]))) return bad("turn/step/index must be numbers");
  const key = tool ? "args" : "texts";
  const members = d[key];
  if (!Array.isArray(members) || members.length === 0 || !members.every((m) => typeof m === "string")) {
    return bad(`${key} must be a non-empty string array`);
  }
  const dt = d["dt"];
  if (!Array.isArray(dt) || !dt.every(isSafeInt)) return bad("dt must be an array of safe integers");
  if (dt.length !== members.length - 1) return bad(`dt length ${dt.length} does not match ${members.length} members`);
  if (seq0 + members.length - 1 > Number.MAX_SAFE_INTEGER) return bad("member seqs must stay safe integers");
  const out: string[] = [];
  let time = time0;
  for (let k = 0; k < members.length; k++) {
    if (k > 0) {
      time += dt[k - 1] as number;
      if (!Number.isSafeInteger(time)) return bad("member times must stay safe integers");
    }
    const chunk: Record<string, unknown> = tool
      ? { type: ROWS[tag], index: d["index"], id: d["id"], ...(named ? { name: d["name"] } : {}), argumentsDelta: members[k] }
      : { type: ROWS[tag], index: d["index"], text: members[k] };
    out.push(JSON.stringify({ type: "assistant/chunk", seq: seq0 + k, time, data: { turn: d["turn"], step: d["step"], chunk } }));
  }
  return out;
}

/** The text of a log file (a `.zstd` one decompressed where this Node can). */
export async function logText(path: string): Promise<string> {
  const bytes = await readFile(path);
  if (!path.endsWith(".zstd")) return bytes.toString("utf8");
  const zstd = (zlib as unknown as { zstdDecompressSync?: (b: Buffer) => Buffer }).zstdDecompressSync;
  if (zstd === undefined) throw new LogRejectedError(path, 1, `zstd logs need Node 22.15 or later (this is ${process.version})`);
  return zstd(bytes).toString("utf8");
}

/**
 * The header and events of a log's text from `nextSeq` on (`header` given: a follower
 * reading what was appended after `offset`); only complete lines count.
 */
export function parseLog(path: string, text: string, start: { header?: Record<string, unknown>; nextSeq?: number; offset?: number; line?: number } = {}): ReadLog {
  let header = start.header;
  let nextSeq = start.nextSeq ?? 0;
  let lineNo = start.line ?? 0;
  const events: LogEvent[] = [];
  let at = start.offset ?? 0;
  let consumed = at;
  while (at < text.length) {
    const end = text.indexOf("\n", at);
    if (end < 0) break; // a line still being written
    const line = text.slice(at, end).replace(/\r$/, "");
    at = end + 1;
    lineNo++;
    if (line.trim() === "") { consumed = at; continue; }
    let obj: unknown;
    try {
      obj = JSON.parse(line);
    } catch (err) {
      throw new LogRejectedError(path, lineNo, `not JSON: ${(err as Error).message}`);
    }
    if (obj === null || typeof obj !== "object" || Array.isArray(obj)) throw new LogRejectedError(path, lineNo, "a line must be a JSON object");
    const record = obj as Record<string, unknown>;
    if (header === undefined) {
      if (record["type"] !== "session") throw new LogRejectedError(path, lineNo, 'the first line must be the session header ("type": "session")');
      const { type: _type, ...rest } = record;
      if (typeof rest["id"] !== "string" || !isSafeInt(rest["createdAt"])) {
        throw new LogRejectedError(path, lineNo, "the header needs a string id and an integer createdAt");
      }
      header = rest;
      consumed = at;
      continue;
    }
    const tag = record["type"];
    const texts = typeof tag === "string" && tag in ROWS ? expandRow(record) : null;
    if (typeof texts === "string") throw new LogRejectedError(path, lineNo, texts);
    if (texts === null) {
      if (typeof tag !== "string") throw new LogRejectedError(path, lineNo, "session event type must be a string");
      if (!isSafeInt(record["seq"])) throw new LogRejectedError(path, lineNo, "session event seq must be a safe integer");
      if (!isSafeInt(record["time"])) throw new LogRejectedError(path, lineNo, "session event time must be a safe integer");
    }
    const lines = texts ?? [line];
    const first = texts === null ? (record["seq"] as number) : (record["seq0"] as number);
    if (first !== nextSeq) throw new LogRejectedError(path, lineNo, `session event seq ${first} is not contiguous; expected ${nextSeq}`);
    lines.forEach((raw, k) => events.push({ seq: first + k, raw }));
    nextSeq += lines.length;
    consumed = at;
  }
  if (header === undefined) throw new LogRejectedError(path, Math.max(lineNo, 1), "no session header");
  return { header, events, consumed };
}
