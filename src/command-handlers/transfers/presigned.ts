import { refuse } from "../../../domain/decider.js";
import type { Party, TransferFile } from "../../../domain/transfer.js";
import { blobKey } from "../../blobs/keys.js";
import { storedSha256 as hashOfStored } from "../../blobs/stored-hash.js";
import type { Actor } from "../streams.js";
import { encryptionOf, partiesInput, type TransferIntent, termsOf } from "./intent.js";
import { resolveParties } from "./parties.js";
import {
  type Alongside,
  changeTransfer,
  createTransfer,
  type NewTransfer,
  prepareSender,
  type TransferDeps,
} from "./record.js";
import { checkFileName, newFileId, newTransferId } from "./upload.js";

/** Decisions 3.16: upload links live an hour, never past the transfer. */
const UPLOAD_LINK_MS = 60 * 60 * 1000;

export interface DeclaredFile {
  name: string;
  size: number;
  contentType: string;
  encryptionIv: string | null;
}

/**
 * Records a transfer whose files the client uploads itself, then hands out one upload link per
 * file; it stays `pending` until confirmed. Sizes count against the plan as declared.
 */
export async function createPresignedTransfer(
  deps: TransferDeps,
  caller: Actor & { accountId: string },
  intent: TransferIntent,
  declared: DeclaredFile[],
) {
  const resolved = await resolveParties(deps, caller.accountId, partiesInput(intent));
  // A person without a receiving key gets files the server encrypts as they stream in, which a
  // direct upload to storage cannot do; one with a key gets what the client encrypted to it.
  const person = resolved.human;
  if (person && !(intent.terms.isEncrypted && person.hasReceivingKey)) {
    throw refuse(
      "INVALID",
      "agent-to-human transfers to someone without a receiving key go through POST /v1/transfers, so the server can encrypt them for the recipient",
      "mode",
    );
  }
  return recordPresignedTransfer(deps, caller, declared, (now) => ({
    parties: resolved.parties,
    human: person ? { registered: person.registered, hasReceivingKey: person.hasReceivingKey } : null,
    terms: termsOf(intent, now),
    encryption: encryptionOf(intent, resolved),
  }));
}

/** A presigned transfer's parties and terms, made once the time of its creation is known. */
export type PresignedTerms = Pick<NewTransfer, "parties" | "human" | "terms" | "encryption">;

/**
 * Records a presigned transfer whose parties are settled (by a caller's intent, or by a request
 * link) and hands out one upload link per file, each also a tus resource (decisions 7.1). The
 * sizes count against the books of `parties.senderAccountId` as declared.
 */
export async function recordPresignedTransfer(
  deps: TransferDeps,
  actor: Actor,
  declared: DeclaredFile[],
  made: (now: Date) => PresignedTerms,
) {
  declared.forEach((file, index) => {
    checkFileName(file.name, `files.${index}.name`);
  });
  const now = deps.clock.now();
  const { parties, human, terms, encryption } = made(now);
  // Overdue transfers give their storage back before the new one is weighed against it.
  await prepareSender(
    deps,
    parties.senderAccountId,
    declared.reduce((sum, file) => sum + file.size, 0),
  );
  const files: TransferFile[] = declared.map((file) => ({
    fileId: newFileId(),
    name: file.name,
    size: file.size,
    type: file.contentType,
    encryptionIv: file.encryptionIv,
  }));
  const transferId = newTransferId();
  const created = await createTransfer(
    deps,
    { transferId, presigned: true, parties, human, atRest: null, terms, files, encryption },
    actor,
  );
  const linksExpire = new Date(Math.min(now.getTime() + UPLOAD_LINK_MS, Date.parse(terms.expiresAt)));
  const uploads = await Promise.all(
    files.map(async (file) => ({
      file,
      link: await deps.blobs.uploadUrl(blobKey(transferId, file.fileId), {
        size: file.size,
        contentType: file.type,
        expiresAt: linksExpire,
      }),
    })),
  );
  return { ...created, uploads, linksExpire };
}

/**
 * Activates a presigned transfer once every file is stored with its declared size. Each stored file
 * is read back once and its SHA-256 recorded, which a recipient's receipt must name (decisions
 * 9.5): the bytes came to the store (or to S3) without passing through a hash of ours.
 */
export function confirmTransfer(
  deps: TransferDeps,
  by: Party,
  actor: Actor,
  transferId: string,
  alongside?: Alongside,
) {
  return changeTransfer(
    deps,
    transferId,
    async (transfer) => {
      const uploaded: Record<string, number | null> = {};
      const storedSha256: Record<string, string> = {};
      for (const file of transfer.record.files) {
        const key = blobKey(transferId, file.fileId);
        uploaded[file.fileId] = (await deps.blobs.stat(key))?.size ?? null;
        if (transfer.status !== "pending" || uploaded[file.fileId] !== file.size) continue;
        const hash = await hashOfStored(deps.blobs, key);
        if (hash) storedSha256[file.fileId] = hash;
      }
      return { type: "ConfirmUpload" as const, by, uploaded, storedSha256 };
    },
    actor,
    alongside,
  );
}
