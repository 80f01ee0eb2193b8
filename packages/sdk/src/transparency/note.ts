import { ed25519 } from "@noble/curves/ed25519.js";
import { fromBase64, toBase64 } from "../crypto/base64.js";
import { HASH_SIZE, type Hash } from "./merkle.js";
import { sha256 } from "./sha256.js";

/**
 * Checkpoints as C2SP signed notes (decisions 9.2): the `tlog-checkpoint` body signed with Ed25519
 * in the `signed-note` format, so that any note verifier (Go's sumdb/note, Tessera's tools) reads
 * them. Pure: the log key's seed is passed in.
 */

/** The signature type byte of Ed25519 in signed notes. */
const ED25519_TYPE = 0x01;
const SIGNATURE_PREFIX = "\u2014 ";
const encoder = new TextEncoder();

export class NoteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NoteError";
  }
}

/** The first 4 bytes of SHA-256(origin ‖ "\n" ‖ 0x01 ‖ public key). */
export function noteKeyId(origin: string, publicKey: Uint8Array): Uint8Array {
  const name = encoder.encode(`${origin}\n`);
  const input = new Uint8Array(name.length + 1 + publicKey.length);
  input.set(name);
  input[name.length] = ED25519_TYPE;
  input.set(publicKey, name.length + 1);
  return sha256(input).slice(0, 4);
}

/** `<origin>+<8 hex digits of key id>+<base64(0x01 ‖ public key)>`. */
export function formatVerifierKey(origin: string, publicKey: Uint8Array): string {
  requireName(origin);
  const typed = new Uint8Array(1 + publicKey.length);
  typed[0] = ED25519_TYPE;
  typed.set(publicKey, 1);
  return `${origin}+${toHex(noteKeyId(origin, publicKey))}+${toBase64(typed)}`;
}

export interface VerifierKey {
  origin: string;
  publicKey: Uint8Array;
  keyId: Uint8Array;
}

export function parseVerifierKey(vkey: string): VerifierKey {
  // The key's base64 may itself hold '+': only the first two separate fields.
  const [origin, hexId, ...keyParts] = vkey.split("+");
  const typedKey = keyParts.join("+");
  if (!origin || !hexId || !typedKey) throw new NoteError("malformed verifier key");
  requireName(origin);
  let typed: Uint8Array;
  try {
    typed = fromBase64(typedKey);
  } catch {
    throw new NoteError("malformed verifier key: key is not base64");
  }
  if (typed.length !== 33 || typed[0] !== ED25519_TYPE)
    throw new NoteError("verifier key is not an Ed25519 key");
  const publicKey = typed.slice(1);
  const keyId = noteKeyId(origin, publicKey);
  if (toHex(keyId) !== hexId.toLowerCase() || !/^[0-9a-f]{8}$/i.test(hexId)) {
    throw new NoteError("verifier key id does not match its key");
  }
  return { origin, publicKey, keyId };
}

/** The note: `body`, an empty line, and one signature line by the key whose seed this is. */
export function signNote(body: string, origin: string, seed: Uint8Array): string {
  requireBody(body);
  requireName(origin);
  const publicKey = ed25519.getPublicKey(seed);
  const signature = ed25519.sign(encoder.encode(body), seed);
  const signed = new Uint8Array(4 + signature.length);
  signed.set(noteKeyId(origin, publicKey));
  signed.set(signature, 4);
  return `${body}\n${SIGNATURE_PREFIX}${origin} ${toBase64(signed)}\n`;
}

/**
 * The body of a note that carries a valid signature by `key`; other signers' lines are passed over,
 * as the format allows. Throws NoteError when the note is malformed or that key did not sign it.
 */
export function openNote(note: string, key: VerifierKey): string {
  const split = note.lastIndexOf("\n\n");
  if (split < 0 || !note.endsWith("\n")) throw new NoteError("malformed note: no signature block");
  // The last blank line ends the body (which may itself hold one), as Go's sumdb/note reads it.
  const body = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split("\n");
  for (const line of lines) {
    if (!line.startsWith(SIGNATURE_PREFIX)) throw new NoteError("malformed note: bad signature line");
    const [name, encoded, extra] = line.slice(SIGNATURE_PREFIX.length).split(" ");
    if (!name || !encoded || extra !== undefined) throw new NoteError("malformed note: bad signature line");
    if (name !== key.origin) continue;
    let signed: Uint8Array;
    try {
      signed = fromBase64(encoded);
    } catch {
      throw new NoteError("malformed note: signature is not base64");
    }
    if (signed.length !== 68 || !sameBytes(signed.slice(0, 4), key.keyId)) continue;
    if (verifySignature(signed.slice(4), encoder.encode(body), key.publicKey)) return body;
    throw new NoteError(`the signature of ${key.origin} on this note is invalid`);
  }
  throw new NoteError(`the note is not signed by ${key.origin}`);
}

/** A checkpoint's body: origin, tree size and root hash (C2SP tlog-checkpoint). */
export interface Checkpoint {
  origin: string;
  size: number;
  root: Hash;
}

export function checkpointBody(checkpoint: Checkpoint): string {
  return `${checkpoint.origin}\n${checkpoint.size}\n${toBase64(checkpoint.root)}\n`;
}

/** Reads a checkpoint body; extension lines after the root are allowed and ignored, as the format says. */
export function parseCheckpoint(body: string): Checkpoint {
  const [origin, size, root] = body.split("\n");
  if (!origin || !size || !root || !/^(0|[1-9][0-9]*)$/.test(size))
    throw new NoteError("malformed checkpoint");
  let rootHash: Uint8Array;
  try {
    rootHash = fromBase64(root);
  } catch {
    throw new NoteError("malformed checkpoint: root is not base64");
  }
  const treeSize = Number(size);
  if (rootHash.length !== HASH_SIZE || !Number.isSafeInteger(treeSize))
    throw new NoteError("malformed checkpoint");
  return { origin, size: treeSize, root: rootHash };
}

/** The checkpoint a note carries, once its signature by `key` checks out and its origin is the key's. */
export function openCheckpoint(note: string, key: VerifierKey): Checkpoint {
  const checkpoint = parseCheckpoint(openNote(note, key));
  if (checkpoint.origin !== key.origin) throw new NoteError("the checkpoint's origin is not its signer's");
  return checkpoint;
}

function verifySignature(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    return ed25519.verify(signature, message, publicKey, { zip215: false });
  } catch {
    return false;
  }
}

function requireName(name: string): void {
  if (!name || /[\s+]/u.test(name)) throw new NoteError("a note signer's name has no spaces or '+'");
}

function requireBody(body: string): void {
  if (!body.endsWith("\n") || body.includes("\n\n") || body.startsWith("\n")) {
    throw new NoteError("malformed note body");
  }
}

function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}
