/**
 * Caller tokens: an EdDSA (Ed25519) JWT per request, claims `rid` (the request id),
 * `sub` (the caller session), `ws` (its workspace, null for none), `req` (the record's
 * digest, ./jcs.ts), `iat`, `exp` (at most 300 s later), header `kid` naming the host key
 * (worker/authn/tokens.py verifies it). Signed last: nothing of the record may change
 * after it.
 */
import { readFile } from "node:fs/promises";
import { createPrivateKey, type KeyObject } from "node:crypto";
import { SignJWT } from "jose";
import { envelopeDigest } from "./jcs.js";

export const MAX_LIFETIME_S = 300;
export const DEFAULT_TTL_S = 60;

export class CallerSigner {
  constructor(
    readonly kid: string,
    private readonly key: KeyObject,
    readonly ttlS: number = DEFAULT_TTL_S,
  ) {
    if (!Number.isInteger(ttlS) || ttlS < 1 || ttlS > MAX_LIFETIME_S) {
      throw new RangeError(`token lifetime must be 1..${MAX_LIFETIME_S} s, got ${ttlS}`);
    }
    if (key.asymmetricKeyType !== "ed25519" || key.type !== "private") {
      throw new TypeError("a caller signer needs an Ed25519 private key");
    }
  }

  /** A signer from a PKCS#8 PEM file (`sessionq keys generate` or `writeHostKey`). */
  static async fromFile(kid: string, path: string, ttlS = DEFAULT_TTL_S): Promise<CallerSigner> {
    let pem: string;
    try {
      pem = await readFile(path, "utf8");
    } catch (err) {
      throw new Error(`signing key ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
    let key: KeyObject;
    try {
      key = createPrivateKey(pem);
    } catch {
      throw new Error(`signing key ${path}: not a PEM private key without a password`);
    }
    return new CallerSigner(kid, key, ttlS);
  }

  /** The token for a record (without `caller.token`) whose caller lives in `workspace`. */
  async sign(envelope: Record<string, unknown>, workspace: string | null): Promise<string> {
    const caller = envelope["caller"] as { session_id: string };
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ rid: envelope["id"], sub: caller.session_id, ws: workspace, req: envelopeDigest(envelope) })
      .setProtectedHeader({ alg: "EdDSA", kid: this.kid })
      .setIssuedAt(now)
      .setExpirationTime(now + this.ttlS)
      .sign(this.key);
  }
}
