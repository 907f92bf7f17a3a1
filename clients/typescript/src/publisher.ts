/**
 * Publishing sessions to `sessionq.events` (docs/host-integration.md, "Publishing
 * sessions"): one idempotent producer (`acks=all`), every record of a session keyed by
 * its workspace routing key so one partition keeps them in order, the header before the
 * first events, events contiguous in seq order in records under `MAX_RECORD_BYTES`.
 * Re-publishing from an earlier seq is harmless (the indexer drops what it has).
 */
import type { Kafka, Producer } from "kafkajs";
import { watch } from "node:fs";
import { stat } from "node:fs/promises";
import { LogRejectedError, logText, parseLog, type LogEvent } from "./logs.js";
import { PRODUCER_CONFIG, routingKey } from "./routing.js";

export const MAX_RECORD_BYTES = 900 * 1024; // under the brokers' default 1 MiB
export const MAX_RECORD_EVENTS = 500;
export const EVENTS_TOPIC = "sessionq.events";

export interface PublishedLog {
  path: string;
  sessionId: string;
  routingKey: string;
  /** The session's last published seq (-1: none). */
  lastSeq: number;
  records: number;
}

export interface PublishSummary {
  published: PublishedLog[];
  rejected: { path: string; reason: string }[];
}

function lineCount(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = text.indexOf("\n", from); i >= 0 && i < to; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

export class Publisher {
  private readonly producer: Producer;
  private started = false;

  constructor(kafka: Kafka, readonly topic: string = EVENTS_TOPIC) {
    this.producer = kafka.producer(PRODUCER_CONFIG);
  }

  async start(): Promise<void> {
    await this.producer.connect();
    this.started = true;
  }

  async stop(): Promise<void> {
    if (this.started) await this.producer.disconnect();
    this.started = false;
  }

  private async send(key: string, values: string[]): Promise<void> {
    await this.producer.send({ topic: this.topic, acks: -1, messages: values.map((value) => ({ key, value })) });
  }

  /** The session's header record (`cwd` absent: the session has no workspace). */
  async header(header: { id: string; createdAt: number; cwd?: string; [field: string]: unknown }): Promise<void> {
    await this.send(routingKey(header), [JSON.stringify({ v: 1, kind: "header", header })]);
  }

  /**
   * `events` (objects, or JSON texts to keep their bytes) as few `events` records as the
   * bounds allow, in order; returns how many records went out.
   */
  async events(sessionId: string, key: string, events: (LogEvent | Record<string, unknown>)[]): Promise<number> {
    const head = `{"v":1,"kind":"events","session_id":${JSON.stringify(sessionId)},"events":[`;
    const values: string[] = [];
    let batch: string[] = [];
    let size = head.length + 2;
    const flush = () => {
      if (batch.length) values.push(`${head}${batch.join(",")}]}`);
      batch = [];
      size = head.length + 2;
    };
    for (const event of events) {
      const raw = "raw" in event && typeof event.raw === "string" ? event.raw : JSON.stringify(event);
      const bytes = Buffer.byteLength(raw) + 1;
      if (batch.length && (batch.length >= MAX_RECORD_EVENTS || size + bytes > MAX_RECORD_BYTES)) flush();
      batch.push(raw);
      size += bytes;
    }
    flush();
    for (const value of values) await this.send(key, [value]);
    return values.length;
  }

  /** The host has the session open (`live`) or closed it. */
  async lifecycle(sessionId: string, key: string, live: boolean): Promise<void> {
    await this.send(key, [JSON.stringify({ v: 1, kind: "lifecycle", session_id: sessionId, live })]);
  }

  /** Forget the session everywhere (header, events, search documents). */
  async delete(sessionId: string, key: string): Promise<void> {
    await this.send(key, [JSON.stringify({ v: 1, kind: "delete", session_id: sessionId })]);
  }

  /** One dsh log: its header, then its events from `fromSeq`. A bad log sends nothing. */
  async publishLog(path: string, fromSeq = 0): Promise<PublishedLog> {
    const log = parseLog(path, await logText(path));
    const header = log.header as { id: string; createdAt: number; cwd?: string };
    const key = routingKey(header);
    await this.header(header);
    const events = log.events.filter((e) => e.seq >= fromSeq);
    const records = 1 + (await this.events(header.id, key, events));
    return { path, sessionId: header.id, routingKey: key, lastSeq: log.events.length - 1, records };
  }

  /** Every log of `paths`; one that is rejected is reported and the others go on. */
  async publishLogs(paths: string[]): Promise<PublishSummary> {
    const summary: PublishSummary = { published: [], rejected: [] };
    for (const path of paths) {
      try {
        summary.published.push(await this.publishLog(path));
      } catch (err) {
        if (!(err instanceof LogRejectedError) && !((err as NodeJS.ErrnoException).code)) throw err;
        summary.rejected.push({ path, reason: (err as Error).message });
      }
    }
    return summary;
  }

  /**
   * Publish a log, then what is appended to it, until `signal` aborts: a file change
   * (or every `pollMs`) publishes the new complete lines. Returns the last state.
   */
  async followLog(path: string, options: { signal: AbortSignal; pollMs?: number; onPublished?: (log: PublishedLog) => void }): Promise<PublishedLog> {
    let size = (await stat(path)).size; // what was read: a later change is read again
    let text = await logText(path);
    const first = parseLog(path, text);
    const header = first.header as { id: string; createdAt: number; cwd?: string };
    const key = routingKey(header);
    await this.header(header);
    let records = 1 + (await this.events(header.id, key, first.events));
    let state = { header: first.header, nextSeq: first.events.length, offset: first.consumed, line: lineCount(text, 0, first.consumed) };
    let current: PublishedLog = { path, sessionId: header.id, routingKey: key, lastSeq: state.nextSeq - 1, records };
    options.onPublished?.(current);
    let wake: (() => void) | null = null;
    const watcher = watch(path, () => wake?.());
    const stop = () => wake?.();
    options.signal.addEventListener("abort", stop, { once: true });
    try {
      while (!options.signal.aborted) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, options.pollMs ?? 1000);
        });
        wake = null;
        if (options.signal.aborted) break;
        const now = (await stat(path)).size; // of the file, compressed or not
        if (now === size) continue;
        size = now;
        text = await logText(path);
        const more = parseLog(path, text, state);
        if (more.events.length === 0) continue;
        records += await this.events(header.id, key, more.events);
        state = { header: first.header, nextSeq: state.nextSeq + more.events.length, offset: more.consumed, line: state.line + lineCount(text, state.offset, more.consumed) };
        current = { path, sessionId: header.id, routingKey: key, lastSeq: state.nextSeq - 1, records };
        options.onPublished?.(current);
      }
    } finally {
      watcher.close();
      options.signal.removeEventListener("abort", stop);
    }
    return current;
  }
}
