import { randomBytes } from "node:crypto";
import type { Multipart } from "@fastify/multipart";
import type { TransferFile } from "../../../domain/transfer.js";
import { storageLeft } from "../../../domain/usage.js";
import { blobKey } from "../../blobs/keys.js";
import { validationError } from "../../http/errors.js";
import { seal } from "../../security/secrets.js";
import type { Actor } from "../streams.js";
import { encryptionOf, partiesInput, type TransferIntent, termsOf } from "./intent.js";
import { resolveParties } from "./parties.js";
import { createTransfer, prepareSender, type TransferDeps } from "./record.js";
import { newTransferId, type ReceivedForm, receiveMultipart } from "./upload.js";

/** The purpose a transfer's at-rest data key is sealed for under the server key. */
export const DATA_KEY_PURPOSE = "transfer-data-key";

/** A multipart upload whose files are stored, waiting to become a transfer, or to be discarded. */
export interface StagedUpload {
  transferId: string;
  form: ReceivedForm;
  /** Deletes the stored files: the upload failed, was refused, or repeated one already done. */
  discard(): Promise<void>;
}

/**
 * Streams every file of a multipart send into file storage, cut off at the plan's file size and
 * the storage the sender has left. Nothing is recorded yet: the form is validated and decided next.
 */
export async function stageUpload(
  deps: TransferDeps,
  caller: Actor & { accountId: string },
  parts: AsyncIterable<Multipart>,
  fingerprinted: boolean,
): Promise<StagedUpload> {
  const sender = await prepareSender(deps, caller.accountId);
  const transferId = newTransferId();
  const form = await receiveMultipart(
    parts,
    deps.blobs,
    transferId,
    { limits: sender.limits, storageLeft: storageLeft(sender.usage.state, sender.limits) },
    // A transfer held for a person without a receiving key is encrypted at rest as it streams in.
    (fields) => (fields.get("mode")?.[0] === "agent-to-human" ? randomBytes(32) : null),
    fingerprinted,
  );
  const keys = form.files.map((file) => blobKey(transferId, file.fileId));
  return { transferId, form, discard: () => deps.blobs.delete(keys) };
}

/** Makes a staged upload a transfer: resolves the parties, then decides and records it. */
export async function sendTransfer(
  deps: TransferDeps,
  caller: Actor & { accountId: string },
  intent: TransferIntent,
  staged: StagedUpload,
) {
  const { transferId, form } = staged;
  if (form.files.length === 0) throw validationError("at least one `files` part is required", "files");
  const ivs = form.fields.get("encryption_iv") ?? [];
  const files: TransferFile[] = form.files.map((file, index) => ({
    ...file,
    encryptionIv: ivs[index] ?? null,
  }));
  const resolved = await resolveParties(deps.db, deps.people, caller.accountId, partiesInput(intent));
  if (resolved.human && !form.dataKey) {
    throw validationError(
      "for agent-to-human transfers send the form fields before the files, so they can be encrypted as they arrive",
      "files",
    );
  }
  return createTransfer(
    deps,
    {
      transferId,
      presigned: false,
      parties: resolved.parties,
      human: resolved.human,
      atRest: form.dataKey ? { wrappedDataKey: seal(deps.serverKey, DATA_KEY_PURPOSE, form.dataKey) } : null,
      terms: termsOf(intent, deps.clock.now()),
      files,
      encryption: encryptionOf(intent, resolved),
    },
    caller,
  );
}
