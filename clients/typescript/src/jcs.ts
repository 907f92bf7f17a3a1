/**
 * What a caller token is bound to (`req`): base64url, unpadded, of SHA-256 over the JCS
 * (RFC 8785) encoding of the record with `caller.token` left out — every other member
 * exactly as sent (worker/authn/binding.py computes the same over what it decoded).
 *
 * JCS here is the `canonicalize` package: members sorted by UTF-16 code units, strings
 * and numbers as `JSON.stringify` writes them (a lone surrogate as its lowercase `\udxxx`
 * escape, which the worker writes too). RFC 8785 asks for I-JSON, so a value holding a
 * non-finite number or an integer beyond ±(2^53 − 1) has no binding: `unsignable` says
 * why, and such a request is never sent.
 */
import { createHash } from "node:crypto";
import canonicalize from "canonicalize";

const MAX_DEPTH = 128;

/** Why `value` cannot be canonicalized for a token (null: it can). */
export function unsignable(value: unknown, depth = 0): string | null {
  if (depth > MAX_DEPTH) return `nesting deeper than ${MAX_DEPTH} levels`;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return "JSON numbers must be finite";
    // JSON.stringify writes an integer below 1e21 as digits alone, which the worker
    // reads back as an integer (and refuses beyond ±(2^53 − 1)); from 1e21 on it writes
    // an exponent, which it reads as a double, as JCS does
    if (Number.isInteger(value) && !Number.isSafeInteger(value) && Math.abs(value) < 1e21) {
      return "JSON integers must be within ±(2^53 - 1)";
    }
    return null;
  }
  if (typeof value === "bigint") return "JSON integers must be within ±(2^53 - 1)";
  if (value === null || typeof value === "string" || typeof value === "boolean") return null;
  if (Array.isArray(value)) {
    for (const item of value) {
      const why = unsignable(item, depth + 1);
      if (why !== null) return why;
    }
    return null;
  }
  if (typeof value === "object") {
    for (const member of Object.values(value as Record<string, unknown>)) {
      const why = unsignable(member, depth + 1);
      if (why !== null) return why;
    }
    return null;
  }
  return `a ${typeof value} is not JSON`;
}

/** The JCS text of `value` (check `unsignable` first). */
export function canonicalJson(value: unknown): string {
  const text = (canonicalize as unknown as (v: unknown) => string | undefined)(value);
  if (text === undefined) throw new TypeError("the value has no JSON form");
  return text;
}

/** The `req` claim of a request or cancel record (its `caller.token` left out). */
export function envelopeDigest(envelope: Record<string, unknown>): string {
  const body: Record<string, unknown> = { ...envelope };
  const caller = body["caller"];
  if (caller !== null && typeof caller === "object" && !Array.isArray(caller) && "token" in caller) {
    const { token: _token, ...rest } = caller as Record<string, unknown>;
    body["caller"] = rest;
  }
  const why = unsignable(body);
  if (why !== null) throw new TypeError(`the request cannot be signed: ${why}`);
  return createHash("sha256").update(canonicalJson(body), "utf8").digest("base64url");
}
