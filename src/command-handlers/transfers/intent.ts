import type { TransferEncryption, TransferMode, TransferTerms } from "../../../domain/transfer.js";
import type { ResolvedParties } from "./parties.js";

/**
 * The terms a caller sets: the transfer's terms (domain/transfer.ts), its expiry as a time from
 * now. A new term of TransferTerms is a new field here, with nothing to change in this file.
 */
export type RequestedTerms = Omit<TransferTerms, "expiresAt"> & { expiresInSeconds: number };

/** What a caller asks of a new transfer, validated at the edge, before anything is resolved. */
export interface TransferIntent {
  mode: TransferMode;
  sender: string;
  recipient: string;
  recipientAccount: string | null;
  terms: RequestedTerms;
  /** The client's encryption material (decisions 3.20), stored as given. */
  encryptedKey: string | null;
  encryptionAlgorithm: string | null;
  senderSignature: string | null;
  recipientKeyVersion: number | null;
}

export function partiesInput(intent: TransferIntent) {
  return {
    mode: intent.mode,
    sender: intent.sender,
    recipient: intent.recipient,
    recipientAccount: intent.recipientAccount,
  };
}

/** The transfer's terms; the plan's retention is the transfer decider's to check. */
export function termsOf(intent: TransferIntent, now: Date): TransferTerms {
  const { expiresInSeconds, ...terms } = intent.terms;
  return { ...terms, expiresAt: new Date(now.getTime() + expiresInSeconds * 1000).toISOString() };
}

/**
 * Decisions 3.20: the client's encryption material, stored as given, plus the parties' public keys.
 * The recipient's key is given for what a browser or a person's client opens or wrote (spec 4.13).
 */
export function encryptionOf(intent: TransferIntent, resolved: ResolvedParties): TransferEncryption {
  const encrypted = intent.terms.isEncrypted;
  const receivingKey = resolved.human?.hasReceivingKey ? resolved.human.account?.receiving_key : null;
  return {
    encryptedKey: encrypted ? intent.encryptedKey : null,
    algorithm: encrypted ? (intent.encryptionAlgorithm ?? "AES-256-GCM") : null,
    senderSignature: intent.senderSignature,
    recipientKeyVersion: encrypted
      ? (intent.recipientKeyVersion ??
        resolved.recipientAgent?.key_version ??
        receivingKey?.keyVersion ??
        null)
      : null,
    senderPublicKey: encrypted ? (resolved.senderAgent?.public_key ?? null) : null,
    recipientPublicKey:
      encrypted && intent.mode !== "agent-to-agent"
        ? (receivingKey?.publicKey ?? resolved.recipientAgent?.public_key ?? null)
        : null,
  };
}
