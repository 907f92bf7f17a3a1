/**
 * Host keys in the format of `sessionq keys generate`: an Ed25519 private key as PKCS#8
 * PEM (`HOST.key`, mode 0600, stays on the host), its public key as SubjectPublicKeyInfo
 * PEM (`HOST.pub`), and the keyring entry `{"kid", "public_key", "workspaces"}`
 * (`HOST.entry.json`) the workers' keyring holds (`{"keys": [entry, ...]}`).
 * `workspaces` are cwd prefixes the host may speak for, `"*"` for every one.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

export interface KeyringEntry {
  kid: string;
  public_key: string;
  workspaces: string[];
}

export interface HostKeyPair {
  kid: string;
  privateKeyPem: string;
  publicKeyPem: string;
  entry: KeyringEntry;
}

const KID = /^[A-Za-z0-9._-]{1,64}$/;

export function generateHostKey(kid: string, workspaces: string[]): HostKeyPair {
  if (!KID.test(kid)) throw new TypeError(`kid must be 1-64 letters, digits, '.', '_' or '-': ${JSON.stringify(kid)}`);
  if (workspaces.length === 0) throw new TypeError("a host key needs a workspace prefix (or \"*\")");
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const privateKeyPem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const publicKeyPem = publicKey.export({ type: "spki", format: "pem" }).toString();
  return { kid, privateKeyPem, publicKeyPem, entry: { kid, public_key: publicKeyPem, workspaces } };
}

/** Write `DIR/KID.key` (0600), `DIR/KID.pub` and `DIR/KID.entry.json`; the paths. */
export async function writeHostKey(dir: string, pair: HostKeyPair): Promise<{ key: string; pub: string; entry: string }> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const paths = { key: join(dir, `${pair.kid}.key`), pub: join(dir, `${pair.kid}.pub`), entry: join(dir, `${pair.kid}.entry.json`) };
  await writeFile(paths.key, pair.privateKeyPem, { mode: 0o600, flag: "wx" });
  await writeFile(paths.pub, pair.publicKeyPem, { mode: 0o644 });
  await writeFile(paths.entry, `${JSON.stringify(pair.entry, null, 2)}\n`, { mode: 0o644 });
  return paths;
}

/** A keyring document holding `entries` (what `sessionq worker --keyring` reads). */
export function keyring(entries: KeyringEntry[]): string {
  return `${JSON.stringify({ keys: entries }, null, 2)}\n`;
}
