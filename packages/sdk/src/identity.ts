import { readFile } from "node:fs/promises";
import {
  ed25519PublicKeyOf,
  fromBase64,
  generateEd25519KeyPair,
  generateX25519KeyPair,
  type KeyPair,
  toBase64,
  x25519PublicKeyOf,
} from "./crypto/index.js";
import { HandoffError } from "./errors.js";
import { writePrivateFile } from "./private-file.js";

/** An agent's identity (decisions 5.1): X25519 to receive, Ed25519 to sign. Private keys stay here. */
export interface Identity {
  agentId: string;
  x25519: KeyPair;
  ed25519: KeyPair;
  /** The file it was loaded from or saved to, if any: pins live beside it by default. */
  path?: string;
}

/** The identity file of decisions 5.5, field for field. */
interface IdentityFile {
  agent_id: string;
  x25519_private_key: string;
  x25519_public_key: string;
  ed25519_private_key: string;
  ed25519_public_key: string;
}

/** Spec 2.1 and decisions 3.22: the slug the API accepts. */
const isAgentId = (text: string) => /^[A-Za-z0-9._-]{1,64}$/.test(text);

/** Fresh key pairs for `agentId`. */
export function createIdentity(agentId: string): Identity {
  if (!isAgentId(agentId)) {
    throw new HandoffError(
      "INVALID_AGENT_ID",
      `agent id '${agentId}' must be 1 to 64 letters, digits, hyphens, underscores or dots`,
    );
  }
  return { agentId, x25519: generateX25519KeyPair(), ed25519: generateEd25519KeyPair() };
}

/** Writes the identity file (mode 0600, atomically) and remembers its path on `identity`. */
export async function saveIdentity(path: string, identity: Identity): Promise<void> {
  const file: IdentityFile = {
    agent_id: identity.agentId,
    x25519_private_key: toBase64(identity.x25519.privateKey),
    x25519_public_key: toBase64(identity.x25519.publicKey),
    ed25519_private_key: toBase64(identity.ed25519.privateKey),
    ed25519_public_key: toBase64(identity.ed25519.publicKey),
  };
  await writePrivateFile(path, `${JSON.stringify(file, null, 2)}\n`);
  identity.path = path;
}

/** Reads an identity file; a missing, malformed or inconsistent file is a HandoffError naming why. */
export async function loadIdentity(path: string): Promise<Identity> {
  const bad = (why: string) => new HandoffError("INVALID_IDENTITY", `identity file ${path}: ${why}`);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw bad(code === "ENOENT" ? "no such file" : `cannot be read (${code ?? String(error)})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw bad("is not JSON");
  }
  if (!parsed || typeof parsed !== "object") throw bad("is not a JSON object");
  const record = parsed as Record<string, unknown>;
  const field = (name: keyof IdentityFile): string => {
    const value = record[name];
    if (typeof value !== "string" || value === "") throw bad(`field ${name} is missing`);
    return value;
  };
  const key = (name: keyof IdentityFile): Uint8Array => {
    const text = field(name);
    const bytes = /^[A-Za-z0-9+/]*={0,2}$/.test(text) ? fromBase64(text) : null;
    if (bytes?.length !== 32) throw bad(`field ${name} is not base64 of 32 bytes`);
    return bytes;
  };
  const agentId = field("agent_id");
  if (!isAgentId(agentId)) throw bad(`agent_id '${agentId}' is not a valid agent id`);
  const identity: Identity = {
    agentId,
    x25519: { privateKey: key("x25519_private_key"), publicKey: key("x25519_public_key") },
    ed25519: { privateKey: key("ed25519_private_key"), publicKey: key("ed25519_public_key") },
    path,
  };
  if (!sameBytes(x25519PublicKeyOf(identity.x25519.privateKey), identity.x25519.publicKey)) {
    throw bad("x25519_public_key does not belong to x25519_private_key");
  }
  if (!sameBytes(ed25519PublicKeyOf(identity.ed25519.privateKey), identity.ed25519.publicKey)) {
    throw bad("ed25519_public_key does not belong to ed25519_private_key");
  }
  return identity;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, index) => byte === b[index]);
}
