import { fromBase64 } from "@handoff/sdk/crypto";
import { type Receipt, verifyReceipt } from "@handoff/sdk/transparency";
import type { Party } from "../../../domain/transfer.js";
import type { Actor } from "../streams.js";
import { changeTransfer, type TransferDeps } from "./record.js";

/** A receipt as posted (decisions 9.5), its shape already validated. */
export interface PostedReceipt {
  receipt: Receipt;
  signature: string;
}

/**
 * Records a recipient's signed receipt: its signature is checked here against the recipient
 * agent's current signing key (`signingPublicKey`, base64, of the agent `by` acts as), the rest by
 * the transfer decider (whose agent, which transfer, which stored bytes). Nothing is recorded on a
 * refusal.
 */
export function recordReceipt(
  deps: TransferDeps,
  by: Party,
  signingPublicKey: string | null,
  actor: Actor,
  transferId: string,
  posted: PostedReceipt,
) {
  const { receipt, signature } = posted;
  const signatureValid =
    signingPublicKey !== null && verifyReceipt(fromBase64(signingPublicKey), receipt, signature);
  return changeTransfer(
    deps,
    transferId,
    {
      type: "RecordReceipt",
      by,
      claim: {
        transferId: receipt.transfer_id,
        recipient: receipt.recipient,
        files: receipt.files.map((file) => ({ name: file.name, storedSha256: file.stored_sha256 })),
      },
      signatureValid,
      posted: { receipt: receipt as unknown as Record<string, unknown>, signature },
    },
    actor,
  );
}
