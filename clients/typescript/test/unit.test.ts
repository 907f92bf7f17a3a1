/** Offline checks of the host client: the protocol's own test vectors and formats. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createPublicKey } from "node:crypto";
import { mkdtemp, readFile, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeJwt, decodeProtectedHeader } from "jose";
import {
  CallerSigner, canonicalJson, decodeReply, envelopeDigest, expandRow, generateHostKey, LogRejectedError,
  parseLog, replyText, routingKey, toolNames, unsignable, writeHostKey,
} from "../src/index.js";

test("the digest test vector of docs/host-integration.md", () => {
  const request = {
    v: 1, kind: "request", id: "a6b1f0de-2f49-4f3e-8d7c-6f1b2c3d4e5f", reply_to: "sessionq.replies",
    tool: "session_search", arguments: { query: "caf\u00e9 \ud83d\ude00", limit: 10, x: 1.0 },
    caller: { token: "ignored", session_id: "3f0c6a52", step_seq: 2 }, timeout_ms: 30000,
  };
  assert.equal(envelopeDigest(request), "wYS46EXaQJiHbLk4pIa8Ipbu_JnOJ5Bpbf_v5O32VF0");
  const { token: _t, ...caller } = request.caller;
  assert.equal(
    canonicalJson({ ...request, caller }),
    '{"arguments":{"limit":10,"query":"café 😀","x":1},"caller":{"session_id":"3f0c6a52","step_seq":2},"id":"a6b1f0de-2f49-4f3e-8d7c-6f1b2c3d4e5f","kind":"request","reply_to":"sessionq.replies","timeout_ms":30000,"tool":"session_search","v":1}',
  );
});

test("a lone surrogate is canonicalized as its lowercase escape", () => {
  assert.equal(canonicalJson({ q: "# Project \ud83d" }), '{"q":"# Project \\ud83d"}');
});

test("what I-JSON cannot hold is never signed", () => {
  assert.match(unsignable({ a: 2 ** 53 }) ?? "", /within ±\(2\^53 - 1\)/);
  assert.match(unsignable({ a: [Infinity] }) ?? "", /finite/);
  assert.equal(unsignable({ a: 2 ** 53 - 1, b: -0.5, c: [null, true, "x"] }), null);
  assert.throws(() => envelopeDigest({ v: 1, id: "r", caller: { session_id: "s" }, n: NaN }), /cannot be signed/);
});

test("a token is EdDSA, names its key and binds the request", async () => {
  const pair = generateHostKey("host-a", ["/home/ana"]);
  const dir = await mkdtemp(join(tmpdir(), "sq-keys-"));
  const paths = await writeHostKey(dir, pair);
  assert.equal((await stat(paths.key)).mode & 0o777, 0o600);
  assert.match(await readFile(paths.key, "utf8"), /^-----BEGIN PRIVATE KEY-----\n/);
  assert.equal(createPublicKey(await readFile(paths.pub, "utf8")).asymmetricKeyType, "ed25519");
  assert.deepEqual(JSON.parse(await readFile(paths.entry, "utf8")), { kid: "host-a", public_key: pair.publicKeyPem, workspaces: ["/home/ana"] });
  const signer = await CallerSigner.fromFile("host-a", paths.key);
  const envelope = { v: 1, kind: "request", id: "r-1", reply_to: "sessionq.replies", tool: "session_trace", arguments: {}, caller: { session_id: "s-1" } };
  const token = await signer.sign(envelope, "/home/ana/shop");
  assert.deepEqual(decodeProtectedHeader(token), { alg: "EdDSA", kid: "host-a" });
  const claims = decodeJwt(token);
  assert.equal(claims["rid"], "r-1");
  assert.equal(claims.sub, "s-1");
  assert.equal(claims["ws"], "/home/ana/shop");
  assert.equal(claims["req"], envelopeDigest(envelope));
  assert.equal((claims.exp ?? 0) - (claims.iat ?? 0), 60);
  assert.throws(() => generateHostKey("bad kid", ["*"]), /kid must be/);
  await assert.rejects(CallerSigner.fromFile("host-a", paths.pub), /not a PEM private key/);
});

test("a packed chunk row expands as sessionq expands it", () => {
  const row = { type: "text-chunks", seq0: 5, time0: 100, data: { turn: 1, step: 2, index: 0, dt: [3, 4], texts: ["a", "b", "c"] } };
  assert.deepEqual((expandRow(row) as string[]).map((t) => JSON.parse(t)), [
    { type: "assistant/chunk", seq: 5, time: 100, data: { turn: 1, step: 2, chunk: { type: "text-delta", index: 0, text: "a" } } },
    { type: "assistant/chunk", seq: 6, time: 103, data: { turn: 1, step: 2, chunk: { type: "text-delta", index: 0, text: "b" } } },
    { type: "assistant/chunk", seq: 7, time: 107, data: { turn: 1, step: 2, chunk: { type: "text-delta", index: 0, text: "c" } } },
  ]);
  const tool = { type: "tool-call-chunks", seq0: 0, time0: 1, data: { turn: 1, step: 1, index: 1, id: "c", name: "bash", dt: [0], args: ["{", "}"] } };
  assert.equal((expandRow(tool) as string[])[1], '{"type":"assistant/chunk","seq":1,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":1,"id":"c","name":"bash","argumentsDelta":"}"}}}');
  assert.equal(expandRow({ ...row, data: { ...row.data, dt: [1] } }), "malformed text-chunks storage row: dt length 1 does not match 3 members");
});

test("a log keeps its lines' bytes and is rejected whole at a gap", () => {
  const head = '{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/w","delegationDepth":0}';
  const event = '{"type":"x/y","seq":0,"time":2,"data":{"2":"b","1":"a"}}';
  const read = parseLog("p", `${head}\n${event}\n{"type":"x/y","seq":1`);
  assert.deepEqual(read.header, { version: 0, id: "s", createdAt: 1, cwd: "/w", delegationDepth: 0 });
  assert.deepEqual(read.events, [{ seq: 0, raw: event }]); // the line still being written waits
  assert.equal(routingKey(read.header as { id: string }), "/w");
  assert.equal(routingKey({ id: "s" }), "session:s");
  assert.throws(() => parseLog("p", `${head}\n${event.replace('"seq":0', '"seq":3')}\n`), (err: unknown) =>
    err instanceof LogRejectedError && err.message === "p:2: session event seq 3 is not contiguous; expected 0");
  assert.throws(() => parseLog("p", "{nope\n"), /p:1: not JSON/);
});

test("replies: unknown shapes are dropped, a cancel reason's own code is kept; the model's text", () => {
  assert.equal(decodeReply(Buffer.from('{"v":1,"id":"r","ok":false,"error":{"code":7,"message":"m"}}')), null);
  // a host that cancels with {code, message} gets them back: not a code of the closed set
  const own = decodeReply(Buffer.from('{"v":1,"id":"r","ok":false,"error":{"code":"HOST_TURN_STOPPED","message":"stopped"},"reason":{"code":"HOST_TURN_STOPPED","message":"stopped"}}'));
  assert.ok(own !== null && !own.ok && own.error.code === "HOST_TURN_STOPPED");
  assert.equal(decodeReply(Buffer.from("not json")), null);
  const reply = decodeReply(Buffer.from('{"v":1,"id":"r","ok":false,"error":{"code":"TOOL_TIMEOUT","message":"tool call timed out after 5ms"}}'));
  assert.ok(reply !== null);
  assert.equal(replyText(reply), "Error: tool call timed out after 5ms");
});

test("the five tools, as the workers declare them", () => {
  assert.deepEqual(toolNames(), ["session_search", "session_event_search", "session_trace", "session_event_trace", "session_event_read"]);
});
