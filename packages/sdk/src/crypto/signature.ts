import { ed25519 } from "@noble/curves/ed25519.js";
import { fromBase64, toBase64 } from "./base64.js";
import { requireKey } from "./keys.js";

/** What the sender signs (decisions 5.4); files in upload order. */
export interface SignedTransfer {
  sender: string;
  recipient: string;
  recipientKeyVersion: number;
  encryptedKey: string;
  files: { name: string; encryptionIv: string }[];
}

const SIGNATURE_SIZE = 64;

/** M = UTF-8 of JSON.stringify(["handoff/v1 signature", sender, recipient, version, encrypted_key, [[name, iv], ...]]). */
export function signatureMessage(t: SignedTransfer): Uint8Array {
  const files = t.files.map((file) => [file.name, file.encryptionIv]);
  const fields = [
    "handoff/v1 signature",
    t.sender,
    t.recipient,
    t.recipientKeyVersion,
    t.encryptedKey,
    files,
  ];
  return new TextEncoder().encode(JSON.stringify(fields));
}

/** base64 of the Ed25519 signature (deterministic, RFC 8032) with the 32-byte signing seed. */
export function signTransfer(signingSeed: Uint8Array, t: SignedTransfer): string {
  return toBase64(ed25519.sign(signatureMessage(t), requireKey(signingSeed, "Ed25519 seed")));
}

/**
 * True only for a valid signature by this key over exactly this transfer; false for anything
 * malformed. Strict RFC 8032 verification (not ZIP-215), as other implementations do it.
 */
export function verifyTransfer(signingPublicKey: Uint8Array, t: SignedTransfer, signature: string): boolean {
  try {
    const signatureBytes = fromBase64(signature);
    if (signatureBytes.length !== SIGNATURE_SIZE) return false;
    const publicKey = requireKey(signingPublicKey, "Ed25519 public key");
    return ed25519.verify(signatureBytes, signatureMessage(t), publicKey, { zip215: false });
  } catch {
    return false;
  }
}
