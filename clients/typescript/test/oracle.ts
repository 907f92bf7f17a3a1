/**
 * What sessionq's Python tests compare against the Python side: `node oracle.js IN OUT`
 * reads `{requests, keys, partitions}` and writes each request's `req` digest (null when
 * it cannot be signed), each key's partition for each partition count, the tool
 * definitions this package hands a model and the error codes it knows.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { ERROR_CODES, envelopeDigest, manifest, partitionOf, unsignable } from "../src/index.js";

const [input, output] = process.argv.slice(2);
if (!input || !output) throw new Error("usage: node oracle.js IN OUT");
const job = JSON.parse(readFileSync(input, "utf8")) as { requests: Record<string, unknown>[]; keys: string[]; partitions: number[] };
writeFileSync(output, JSON.stringify({
  digests: job.requests.map((r) => (unsignable(r) === null ? envelopeDigest(r) : null)),
  partitions: Object.fromEntries(job.partitions.map((n) => [String(n), job.keys.map((k) => partitionOf(k, n))])),
  manifest: manifest(),
  codes: ERROR_CODES,
}));
