/**
 * Calling the five tools over Kafka (docs/host-integration.md, "Calling tools"): one
 * idempotent producer for `sessionq.requests`, one reader of the reply topic from its end
 * (positioned before `start` resolves, so no reply to a later request can be missed),
 * replies completed by request id and everything else dropped (duplicates, other hosts'
 * replies), a signed caller token on every request and cancel, an `AbortSignal` that
 * sends a cancel, and a local `TOOL_TIMEOUT` when no reply comes within the deadline
 * plus a grace period.
 *
 * The reader is a consumer of a group of its own (`sessionq-host-<uuid>`, no offsets
 * committed): kafkajs reads topics through groups only. Under ACLs the host principal
 * needs READ on that group prefix and on the reply topic.
 */
import { randomUUID } from "node:crypto";
import type { Admin, Consumer, Kafka, Producer } from "kafkajs";
import { PRODUCER_CONFIG, routingKey } from "./routing.js";
import { SessionqToolError, type ErrorCode } from "./codes.js";
import { unsignable } from "./jcs.js";
import { CallerSigner } from "./tokens.js";

export const REQUESTS_TOPIC = "sessionq.requests";
export const REPLIES_TOPIC = "sessionq.replies";
export const MAX_REQUEST_BYTES = 1024 * 1024;
export const TIMEOUT_GRACE_MS = 2000;
/** How long a call without `timeoutMs` is waited for: the workers' largest cap. */
export const DEFAULT_WAIT_MS = 60000;
/** After a cancel, how long the worker's own (cancelled) reply is waited for. */
export const CANCEL_GRACE_MS = 5000;

export type ToolName = "session_search" | "session_event_search" | "session_trace" | "session_event_trace" | "session_event_read";

/**
 * A reply's error code: one of the closed set, or the code of a cancel's own reason (a
 * host that cancels with `{code, message}` gets them back), so any string.
 */
export type ReplyCode = ErrorCode | (string & {});

export type Reply =
  | { v: 1; id: string; ok: true; text: string }
  | { v: 1; id: string; ok: false; error: { code: ReplyCode; message: string }; reason?: unknown };

export interface CallOptions {
  /** The session whose model made the call: trusted, from the host's own state. */
  sessionId: string;
  /** The caller's cwd (null or absent: it has none); a signing client vouches for it. */
  workspace?: string | null;
  /** Seq of the caller's current `step/start` (absent: its last in the stored log). */
  stepSeq?: number;
  /** The newest seq published for the caller: the answer waits until it is indexed. */
  minSeq?: number;
  timeoutMs?: number;
  /** Partition key (default: the workspace, else `session:<id>`). */
  routingKey?: string;
  requestId?: string;
  /** Aborting it sends a cancel; the call then resolves with the worker's answer to it. */
  signal?: AbortSignal;
}

export interface ClientOptions {
  requestsTopic?: string;
  replyTopic?: string;
  signer?: CallerSigner;
  /** Where each distinct warning goes once (default: console.warn). */
  warn?: (message: string) => void;
}

function localError(id: string, code: ErrorCode, message: string): Reply {
  return { v: 1, id, ok: false, error: { code, message } };
}

/** The reply in a record value, or null when it is none (dropped). */
export function decodeReply(value: Buffer | null): Reply | null {
  if (value === null) return null;
  let obj: unknown;
  try {
    obj = JSON.parse(value.toString("utf8"));
  } catch {
    return null;
  }
  if (obj === null || typeof obj !== "object") return null;
  const r = obj as Record<string, unknown>;
  if (r["v"] !== 1 || typeof r["id"] !== "string" || typeof r["ok"] !== "boolean") return null;
  if (r["ok"]) return typeof r["text"] === "string" ? (r as Reply) : null;
  const error = r["error"] as Record<string, unknown> | undefined;
  if (!error || typeof error["message"] !== "string" || typeof error["code"] !== "string") return null;
  return r as Reply;
}

/** What the model is given for a reply: its text, or `Error: <message>`. */
export function replyText(reply: Reply): string {
  return reply.ok ? reply.text : `Error: ${reply.error.message}`;
}

interface Pending {
  resolve: (reply: Reply) => void;
}

export class SessionqClient {
  readonly requestsTopic: string;
  readonly replyTopic: string;
  private readonly signer: CallerSigner | undefined;
  private readonly producer: Producer;
  private readonly consumer: Consumer;
  private readonly admin: Admin;
  private readonly pending = new Map<string, Pending>();
  private readonly warned = new Set<string>();
  private readonly warn: (message: string) => void;

  constructor(kafka: Kafka, options: ClientOptions = {}) {
    this.requestsTopic = options.requestsTopic ?? REQUESTS_TOPIC;
    this.replyTopic = options.replyTopic ?? REPLIES_TOPIC;
    this.signer = options.signer;
    this.warn = options.warn ?? ((m) => console.warn(`sessionq: ${m}`));
    this.producer = kafka.producer(PRODUCER_CONFIG);
    this.consumer = kafka.consumer({ groupId: `sessionq-host-${randomUUID()}`, allowAutoTopicCreation: false });
    this.admin = kafka.admin();
  }

  /** Connect, and read the reply topic from its current end before resolving. */
  async start(): Promise<void> {
    await Promise.all([this.producer.connect(), this.consumer.connect(), this.admin.connect()]);
    await this.consumer.subscribe({ topic: this.replyTopic, fromBeginning: false });
    const joined = new Promise<void>((resolve) => {
      const off = this.consumer.on(this.consumer.events.GROUP_JOIN, () => { off(); resolve(); });
    });
    await this.consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => {
        const reply = decodeReply(message.value);
        if (reply === null) return;
        const waiter = this.pending.get(reply.id);
        if (waiter !== undefined) {
          this.pending.delete(reply.id);
          waiter.resolve(reply);
        }
      },
    });
    await joined;
    for (const { partition, high } of await this.admin.fetchTopicOffsets(this.replyTopic)) {
      this.consumer.seek({ topic: this.replyTopic, partition, offset: high });
    }
  }

  async stop(): Promise<void> {
    for (const [id, waiter] of this.pending) waiter.resolve(localError(id, "SESSION_QUERY_ABORTED", "session query was cancelled"));
    this.pending.clear();
    await Promise.allSettled([this.consumer.disconnect(), this.producer.disconnect(), this.admin.disconnect()]);
  }

  /** One tool call: the worker's reply (or a local `INVALID_ARGS` / `TOOL_TIMEOUT`). */
  async call(tool: ToolName | string, args: unknown, options: CallOptions): Promise<Reply> {
    const id = options.requestId ?? randomUUID();
    const workspace = options.workspace ?? null;
    const caller: Record<string, unknown> = { session_id: options.sessionId };
    if (options.stepSeq !== undefined) caller["step_seq"] = options.stepSeq;
    if (options.minSeq !== undefined) caller["min_seq"] = options.minSeq;
    const request: Record<string, unknown> = { v: 1, kind: "request", id, reply_to: this.replyTopic, tool, arguments: args, caller };
    if (options.timeoutMs !== undefined) request["timeout_ms"] = options.timeoutMs;
    const why = unsignable(request);
    if (why !== null) return localError(id, "INVALID_ARGS", `invalid arguments: the request cannot be signed: ${why}`);
    const value = JSON.stringify(await this.signed(request, workspace));
    const size = Buffer.byteLength(value);
    if (size > MAX_REQUEST_BYTES) {
      return localError(id, "INVALID_ARGS", `invalid arguments: the request is ${size} bytes; the maximum is ${MAX_REQUEST_BYTES}`);
    }
    const key = options.routingKey ?? routingKey({ id: options.sessionId, cwd: workspace });
    const answered = new Promise<Reply>((resolve) => this.pending.set(id, { resolve }));
    const signal = options.signal;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const gaveUp = new Promise<Reply>((resolve) => {
      const wait = (options.timeoutMs ?? DEFAULT_WAIT_MS) + TIMEOUT_GRACE_MS;
      timer = setTimeout(() => {
        void this.cancel(id, { code: "TOOL_TIMEOUT", message: "host stopped waiting" }, key, options.sessionId, workspace).catch(() => undefined);
        resolve(localError(id, "TOOL_TIMEOUT", `tool call timed out after ${options.timeoutMs ?? DEFAULT_WAIT_MS}ms`));
      }, wait);
      onAbort = () => {
        void this.cancel(id, { code: "SESSION_QUERY_ABORTED", message: "session query was cancelled" }, key, options.sessionId, workspace).catch(() => undefined);
        clearTimeout(timer);
        timer = setTimeout(() => resolve(localError(id, "SESSION_QUERY_ABORTED", "session query was cancelled")), CANCEL_GRACE_MS);
      };
    });
    try {
      if (signal?.aborted) return localError(id, "SESSION_QUERY_ABORTED", "session query was cancelled");
      await this.producer.send({ topic: this.requestsTopic, acks: -1, messages: [{ key, value }] });
      if (signal !== undefined && onAbort !== undefined) signal.addEventListener("abort", onAbort, { once: true });
      const reply = await Promise.race([answered, gaveUp]);
      if (!reply.ok && reply.error.code === "SESSION_QUERY_CALLER_UNAUTHENTICATED") this.refused(workspace);
      return reply;
    } finally {
      clearTimeout(timer);
      if (signal !== undefined && onAbort !== undefined) signal.removeEventListener("abort", onAbort);
      this.pending.delete(id);
    }
  }

  /** The reply text of a call, or a `SessionqToolError` with its code. */
  async callText(tool: ToolName | string, args: unknown, options: CallOptions): Promise<string> {
    const reply = await this.call(tool, args, options);
    if (reply.ok) return reply.text;
    throw new SessionqToolError(reply.error.code, reply.error.message, reply.id);
  }

  /** A cancel record keyed like its request (same partition, so the worker running it). */
  async cancel(requestId: string, reason: unknown, key: string, sessionId: string, workspace: string | null = null): Promise<void> {
    const record = await this.signed({ v: 1, kind: "cancel", id: requestId, reason, caller: { session_id: sessionId } }, workspace);
    await this.producer.send({ topic: this.requestsTopic, acks: -1, messages: [{ key, value: JSON.stringify(record) }] });
  }

  private async signed(envelope: Record<string, unknown>, workspace: string | null): Promise<Record<string, unknown>> {
    if (this.signer === undefined) return envelope;
    const token = await this.signer.sign(envelope, workspace);
    return { ...envelope, caller: { ...(envelope["caller"] as object), token } };
  }

  private refused(workspace: string | null): void {
    const why = this.signer === undefined
      ? "no signing key: the workers authenticate callers"
      : `the keyring of the workers does not hold key "${this.signer.kid}", it does not cover workspace ${JSON.stringify(workspace)}, or the caller's stored cwd differs`;
    const message = `a caller was refused; likely cause: ${why}`;
    if (!this.warned.has(message)) {
      this.warned.add(message);
      this.warn(message);
    }
  }
}
