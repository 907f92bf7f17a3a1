/**
 * The TypeScript host against a real broker and the real Python indexer and workers
 * (driven by tests/clients/test_typescript_host.py, which starts the broker and the
 * indexer, computes the expected answers with `sessionq call --data`, and writes the
 * config this reads from $SESSIONQ_TS_E2E). This side starts and kills the workers.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { createPrivateKey } from "node:crypto";
import { appendFile, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import {
  CallerSigner, generateHostKey, keyring, Publisher, SessionqClient, writeHostKey,
  type KeyringEntry, type PublishedLog, type Reply,
} from "../src/index.js";

interface Expected { tool: string; args: unknown; caller: string; stepSeq?: number; routingKey?: string; reply: { ok: boolean; text?: string; error?: { code: string; message: string } } }
interface Config {
  bootstrap: string;
  topics: { events: string; requests: string; replies: string; dlq: string };
  python: string; repo: string; data: string; work: string; group: string;
  corpus: string[]; pythonKey: { kid: string; key: string; entry: string };
  calls: Expected[];
}

const config = JSON.parse(await readFile(process.env["SESSIONQ_TS_E2E"] ?? "", "utf8")) as Config;
const kafka = new Kafka({ clientId: "sessionq-ts-e2e", brokers: [config.bootstrap], logLevel: logLevel.NOTHING });
const workers: ChildProcess[] = [];

function startWorker(keyringPath: string): ChildProcess {
  const env = {
    ...process.env, PYTHONUNBUFFERED: "1", SESSIONQ_METRICS_LISTEN: "127.0.0.1:0",
    SESSIONQ_EVENTS_TOPIC: config.topics.events, SESSIONQ_REQUESTS_TOPIC: config.topics.requests,
    SESSIONQ_REPLIES_TOPIC: config.topics.replies, SESSIONQ_DLQ_TOPIC: config.topics.dlq,
  };
  const args = ["-m", "worker", "worker", "--bootstrap", config.bootstrap, "--data", config.data, "--group", config.group, "--keyring", keyringPath];
  const child = spawn(config.python, args, { cwd: config.repo, env, stdio: ["ignore", "ignore", "inherit"] });
  workers.push(child);
  return child;
}

const say = (what: string) => console.error(`${new Date().toISOString()} ${what}`);

const same = (reply: Reply, expected: Expected["reply"]) =>
  reply.ok ? { ok: true, text: reply.text } : { ok: false, error: reply.error };

test("a TypeScript host publishes, calls and cancels against the Python workers", async (t) => {
  await mkdir(config.work, { recursive: true });
  const ts = generateHostKey("ts-host", ["*"]);
  await writeHostKey(join(config.work, "keys"), ts);
  const pyEntry = JSON.parse(await readFile(config.pythonKey.entry, "utf8")) as KeyringEntry;
  const keyringPath = join(config.work, "keyring.json");
  await writeFile(keyringPath, keyring([ts.entry, pyEntry]));
  let worker = startWorker(keyringPath);

  const publisher = new Publisher(kafka, config.topics.events);
  await publisher.start();
  const signer = await CallerSigner.fromFile("ts-host", join(config.work, "keys", "ts-host.key"));
  const client = new SessionqClient(kafka, { requestsTopic: config.topics.requests, replyTopic: config.topics.replies, signer, warn: () => undefined });
  say("starting the client");
  await client.start();
  say("client started");
  const published = new Map<string, PublishedLog>();
  try {
    await t.test("the real corpus: every good log published, the broken ones named", async () => {
      say("the real corpus: every good log published, the broken ones named");
      const summary = await publisher.publishLogs(config.corpus);
      for (const log of summary.published) published.set(log.sessionId, log);
      assert.equal(summary.published.length, 156);
      assert.deepEqual(summary.rejected.map((r) => r.reason.replace(/^.*:\d+: /, "")), [
        "session event seq 87 is not contiguous; expected 6",
        "session event seq 1 is not contiguous; expected 0",
        "session event seq 1 is not contiguous; expected 0",
      ]);
    });

    await t.test("every published session is indexed through its last event (read-your-writes)", async () => {
      say("every published session is indexed through its last event (read-your-writes)");
      const logs = [...published.values()];
      for (let i = 0; i < logs.length; i += 16) {
        const replies = await Promise.all(logs.slice(i, i + 16).map((log) =>
          client.call("session_trace", {}, {
            sessionId: log.sessionId, workspace: log.routingKey.startsWith("/") ? log.routingKey : null,
            minSeq: log.lastSeq, timeoutMs: 60000,
          })));
        for (const reply of replies) assert.ok(reply.ok || reply.error.code !== "TOOL_TIMEOUT", JSON.stringify(reply));
      }
    });

    await t.test("every tool answers as `sessionq call` does, byte for byte", async () => {
      say("every tool answers as `sessionq call` does, byte for byte");
      for (const call of config.calls) {
        const log = published.get(call.caller);
        say(`  ${call.tool} as ${call.caller}`);
        const reply = await client.call(call.tool, call.args, {
          sessionId: call.caller, workspace: log && log.routingKey.startsWith("/") ? log.routingKey : null,
          stepSeq: call.stepSeq, minSeq: log?.lastSeq, timeoutMs: 45000, routingKey: call.routingKey,
        });
        assert.deepEqual(same(reply, call.reply), call.reply, `${call.tool} ${JSON.stringify(call.args)} as ${call.caller}`);
      }
    });

    const acp = config.calls[0]!;
    const acpLog = published.get(acp.caller)!;
    const asAcp = { sessionId: acp.caller, workspace: acpLog.routingKey, minSeq: acpLog.lastSeq, timeoutMs: 30000 };

    await t.test("a key `sessionq keys generate` wrote signs for this host too", async () => {
      say("a key `sessionq keys generate` wrote signs for this host too");
      const python = new SessionqClient(kafka, {
        requestsTopic: config.topics.requests, replyTopic: config.topics.replies,
        signer: await CallerSigner.fromFile(config.pythonKey.kid, config.pythonKey.key), warn: () => undefined,
      });
      await python.start();
      try {
        const reply = await python.call("session_trace", {}, asAcp);
        assert.deepEqual(same(reply, acp.reply), { ok: true, text: (await client.callText("session_trace", {}, asAcp)) });
      } finally {
        await python.stop();
      }
    });

    await t.test("a tampered token and an unknown key are refused", async () => {
      say("a tampered token and an unknown key are refused");
      class Tampering extends CallerSigner {
        override async sign(envelope: Record<string, unknown>, workspace: string | null): Promise<string> {
          return super.sign({ ...envelope, arguments: { query: "something else" } }, workspace);
        }
      }
      const refusals: string[] = [];
      const tampered = new SessionqClient(kafka, {
        requestsTopic: config.topics.requests, replyTopic: config.topics.replies,
        signer: new Tampering("ts-host", createPrivateKey(ts.privateKeyPem)), warn: (m) => refusals.push(m),
      });
      const stranger = generateHostKey("ts-host", ["*"]); // the same kid, another key
      await writeHostKey(join(config.work, "stranger"), stranger);
      const unknown = new SessionqClient(kafka, {
        requestsTopic: config.topics.requests, replyTopic: config.topics.replies,
        signer: await CallerSigner.fromFile("ts-host", join(config.work, "stranger", "ts-host.key")), warn: () => undefined,
      });
      await Promise.all([tampered.start(), unknown.start()]);
      try {
        for (const c of [tampered, unknown]) {
          const reply = await c.call("session_search", { query: "subagent" }, asAcp);
          assert.equal(reply.ok, false);
          assert.equal(!reply.ok && reply.error.code, "SESSION_QUERY_CALLER_UNAUTHENTICATED");
        }
        assert.equal(refusals.length, 1);
      } finally {
        await Promise.all([tampered.stop(), unknown.stop()]);
      }
    });

    await t.test("a cancel stops a running call", async () => {
      say("a cancel stops a running call");
      const controller = new AbortController();
      // the worker waits for an event that is never published (read-your-writes), until cancelled
      const pending = client.call("session_search", { query: "subagent" }, { ...asAcp, minSeq: acpLog.lastSeq + 1000, timeoutMs: 60000, signal: controller.signal });
      setTimeout(() => controller.abort(), 1500);
      const reply = await pending;
      assert.deepEqual(same(reply, { ok: false }), { ok: false, error: { code: "SESSION_QUERY_ABORTED", message: "session query was cancelled" } });
      // a cancel with a reason of the host's own: the reply carries its code and message
      const requestId = "ts-own-reason";
      const own = client.call("session_search", { query: "subagent" }, { ...asAcp, requestId, minSeq: acpLog.lastSeq + 1000, timeoutMs: 60000 });
      await new Promise((r) => setTimeout(r, 1500));
      await client.cancel(requestId, { code: "HOST_TURN_STOPPED", message: "the user stopped the turn" }, acpLog.routingKey, acp.caller, acpLog.routingKey);
      assert.deepEqual(same(await own, { ok: false }), { ok: false, error: { code: "HOST_TURN_STOPPED", message: "the user stopped the turn" } });
    });

    await t.test("a follower publishes what a growing log appends", async () => {
      say("a follower publishes what a growing log appends");
      const path = join(config.work, "live", "session.jsonl");
      await mkdir(join(config.work, "live"), { recursive: true });
      const header = { type: "session", version: 0, id: "ts-live", createdAt: 1784851200000, cwd: acpLog.routingKey, delegationDepth: 0 };
      const user = (seq: number, text: string) => JSON.stringify({ type: "user/message", seq, time: 1784851200000 + seq, data: { content: [{ type: "text", text }], source: { kind: "user" }, role: "user", id: `u-${seq}` }, surfaceOp: "append" });
      await writeFile(path, `${JSON.stringify(header)}\n${user(0, "first words")}\n`);
      const controller = new AbortController();
      let last = -1;
      const following = publisher.followLog(path, { signal: controller.signal, pollMs: 100, onPublished: (log) => { last = log.lastSeq; } });
      await appendFile(path, `${user(1, "a zanzibar appended")}\n${user(2, "and a half").slice(0, 40)}`);
      while (last < 1) await new Promise((r) => setTimeout(r, 50));
      // asked by a peer of its workspace until the indexer has it (min_seq is the caller's)
      let found = "";
      for (let i = 0; i < 200 && !/seq 1 \| user\/message/.test(found); i++) {
        const reply = await client.call("session_event_search", { query: "zanzibar", session_id: "ts-live" }, asAcp);
        found = reply.ok ? reply.text : reply.error.code;
        if (!/seq 1 \| user\/message/.test(found)) await new Promise((r) => setTimeout(r, 100));
      }
      assert.match(found, /seq 1 \| user\/message/);
      assert.equal(last, 1); // the line still being written waits for its newline
      controller.abort();
      await following;

      await publisher.delete("ts-live", acpLog.routingKey);
      let answer = "";
      // gone: a missing session and a foreign one are the same refusal (SPEC §9.5)
      for (let i = 0; i < 100 && answer !== "SESSION_QUERY_TOOL_UNAUTHORIZED"; i++) {
        const reply = await client.call("session_trace", { session_id: "ts-live" }, asAcp);
        answer = reply.ok ? reply.text : reply.error.code;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(answer, "SESSION_QUERY_TOOL_UNAUTHORIZED");
    });

    await t.test("a worker killed mid-call: its successor answers within the deadline", async () => {
      say("a worker killed mid-call: its successor answers within the deadline");
      const key = acpLog.routingKey;
      const next = acpLog.lastSeq + 1;
      const pending = client.call("session_event_read", { seq: next }, { ...asAcp, minSeq: next, timeoutMs: 50000 });
      await new Promise((r) => setTimeout(r, 2000)); // the request is in the worker, waiting for seq `next`
      worker.kill("SIGKILL");
      worker = startWorker(keyringPath);
      await publisher.events(acp.caller, key, [{ type: "plugin/open-event", seq: next, time: 1789000000000, data: { after: "restart" } }]);
      const reply = await pending;
      assert.equal(reply.ok, true, JSON.stringify(reply));
      assert.match(reply.ok ? reply.text : "", /"after": "restart"/);
    });
  } finally {
    await client.stop();
    await publisher.stop();
    for (const w of workers) w.kill("SIGTERM");
  }
});
