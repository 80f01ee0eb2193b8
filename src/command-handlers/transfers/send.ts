import { fromBase64, wrapContentKey } from "@handoff/sdk";
import { refuse } from "../../../domain/decider.js";
import { storageLeft } from "../../../domain/storage-quota.js";
import type { AtRestEncryption, TransferEncryption, TransferFile } from "../../../domain/transfer.js";
import { blobKey } from "../../blobs/keys.js";
import { newHeldContentKey } from "../../security/at-rest.js";
import type { Actor } from "../streams.js";
import { encryptionOf, partiesInput, type TransferIntent, termsOf } from "./intent.js";
import { type PersonRecipient, resolveParties } from "./parties.js";
import { createTransfer, prepareSender, type TransferDeps } from "./record.js";
import { type FormPart, newTransferId, type ReceivedForm, receiveMultipart } from "./upload.js";

/** A multipart upload whose files are stored, waiting to become a transfer, or to be discarded. */
export interface StagedUpload {
  transferId: string;
  form: ReceivedForm;
  /** Deletes the stored files (and a held key): the upload failed, was refused, or repeated one already done. */
  discard(): Promise<void>;
}

/** A multipart request's body as it arrives. */
export interface MultipartUpload {
  parts: AsyncIterable<FormPart>;
  /** Its declared Content-Length, or null (chunked): no file can take more. */
  bodyBytes: number | null;
  /** An Idempotency-Key came with it: fingerprint the files so a retry can be recognised. */
  fingerprinted: boolean;
}

/**
 * Whether the server encrypts a send's files as they stream in (decisions 4.5): a send to a person
 * that the client did not encrypt itself. Decided on the fields sent before the first file.
 */
const serverEncrypts = (fields: Map<string, string[]>) =>
  fields.get("mode")?.[0] === "agent-to-human" &&
  !["true", "1"].includes(fields.get("is_encrypted")?.[0] ?? "");

/**
 * Streams every file of a multipart send into file storage, cut off at the plan's file size and
 * the storage the sender has left. Nothing is recorded yet: the form is validated and decided next.
 */
export async function stageUpload(
  deps: TransferDeps,
  caller: Actor & { accountId: string },
  { parts, bodyBytes, fingerprinted }: MultipartUpload,
): Promise<StagedUpload> {
  const sender = await prepareSender(deps, caller.accountId, bodyBytes);
  const transferId = newTransferId();
  const form = await receiveMultipart(
    parts,
    deps.blobs,
    transferId,
    { limits: sender.limits, storageLeft: storageLeft(sender.usage.state.bytesHeld, sender.limits) },
    (fields) => (serverEncrypts(fields) ? newHeldContentKey() : null),
    fingerprinted,
  );
  const keys = form.files.map((file) => blobKey(transferId, file.fileId));
  return {
    transferId,
    form,
    discard: async () => {
      await deps.blobs.delete(keys);
      await deps.heldKeys.destroy([transferId]);
    },
  };
}

/**
 * How a person's transfer is encrypted (decisions 4.5). The client encrypted it: only to a
 * receiving key it can have resolved. The server encrypted it under K: K is wrapped to the
 * person's receiving key at once when there is one (active), else held sealed for them.
 */
async function forPerson(
  deps: TransferDeps,
  transferId: string,
  intent: TransferIntent,
  person: PersonRecipient,
  contentKey: Uint8Array | null,
  encryption: TransferEncryption,
): Promise<{ atRest: AtRestEncryption | null; encryption: TransferEncryption }> {
  const key = person.hasReceivingKey ? person.account?.receiving_key : null;
  if (intent.terms.isEncrypted) {
    if (!key) {
      throw refuse(
        "INVALID",
        "this person has no receiving key yet: send without is_encrypted and the server holds the files for them",
        "is_encrypted",
      );
    }
    return { atRest: null, encryption };
  }
  if (!contentKey) {
    throw refuse(
      "INVALID",
      "for agent-to-human transfers send the form fields before the files, so they can be encrypted as they arrive",
      "files",
    );
  }
  const serverEncrypted = { ...encryption, algorithm: "AES-256-GCM", senderSignature: null };
  if (!key) {
    await deps.heldKeys.hold(transferId, contentKey);
    return { atRest: { format: "HOE1" }, encryption: serverEncrypted };
  }
  return {
    atRest: { format: "HOE1" },
    encryption: {
      ...serverEncrypted,
      encryptedKey: await wrapContentKey(contentKey, fromBase64(key.publicKey)),
      recipientKeyVersion: key.keyVersion,
      recipientPublicKey: key.publicKey,
    },
  };
}

/** Makes a staged upload a transfer: resolves the parties, then decides and records it. */
export async function sendTransfer(
  deps: TransferDeps,
  caller: Actor & { accountId: string },
  intent: TransferIntent,
  staged: StagedUpload,
) {
  const { transferId, form } = staged;
  if (form.files.length === 0) throw refuse("INVALID", "at least one `files` part is required", "files");
  const ivs = form.fields.get("encryption_iv") ?? [];
  const files: TransferFile[] = form.files.map((file, index) => ({
    ...file,
    encryptionIv: file.encryptionIv ?? ivs[index] ?? null,
  }));
  const resolved = await resolveParties(deps, caller.accountId, partiesInput(intent));
  let encryption = encryptionOf(intent, resolved);
  let atRest: AtRestEncryption | null = null;
  if (resolved.human) {
    ({ atRest, encryption } = await forPerson(
      deps,
      transferId,
      intent,
      resolved.human,
      form.contentKey,
      encryption,
    ));
  }
  const terms = termsOf(intent, deps.clock.now());
  return createTransfer(
    deps,
    {
      transferId,
      presigned: false,
      parties: resolved.parties,
      human: resolved.human
        ? { registered: resolved.human.registered, hasReceivingKey: resolved.human.hasReceivingKey }
        : null,
      atRest,
      terms: { ...terms, isEncrypted: terms.isEncrypted || atRest !== null },
      files,
      encryption,
    },
    caller,
  );
}
