import { ed25519 } from "@noble/curves/ed25519.js";
import { fromBase64, toBase64 } from "../crypto/base64.js";
import { canonicalJson } from "./entry.js";

/**
 * A recipient-signed receipt (decisions 9.5): what the recipient's client received, signed with the
 * agent's Ed25519 key over the receipt's RFC 8785 bytes. Hashes are lowercase hex SHA-256.
 */
export interface Receipt {
  type: "handoff.receipt/v1";
  transfer_id: string;
  /** The recipient agent's uuid. */
  recipient: string;
  /** The sender's signature (decisions 5.4), or null for an unsigned transfer. */
  sender_signature: string | null;
  files: { name: string; size: number; sha256: string; stored_sha256: string }[];
  /** Shield's level and verdict (decisions 5.6), or null when it was off. */
  shield: { level: string; verdict: string } | null;
  received_at: string;
}

export const RECEIPT_TYPE = "handoff.receipt/v1";

const encoder = new TextEncoder();

/** base64 of the Ed25519 signature of the receipt's canonical JSON with the agent's 32-byte seed. */
export function signReceipt(signingSeed: Uint8Array, receipt: Receipt): string {
  return toBase64(ed25519.sign(encoder.encode(canonicalJson(receipt)), signingSeed));
}

/** True only for a valid signature by this key over exactly this receipt (strict RFC 8032). */
export function verifyReceipt(signingPublicKey: Uint8Array, receipt: unknown, signature: string): boolean {
  try {
    const bytes = encoder.encode(canonicalJson(receipt));
    return ed25519.verify(fromBase64(signature), bytes, signingPublicKey, { zip215: false });
  } catch {
    return false;
  }
}
