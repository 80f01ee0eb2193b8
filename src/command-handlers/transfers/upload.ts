import { createHash, type Hash } from "node:crypto";
import { type Duplex, pipeline, type Readable, type Transform } from "node:stream";
import { encryptedSize } from "@handoff/sdk";
import { refuse } from "../../../domain/decider.js";
import { fileNameProblem } from "../../../domain/file-names.js";
import type { PlanLimits } from "../../../domain/plan-limits.js";
import { tooLarge, uploadAllowance } from "../../../domain/storage-quota.js";
import type { TransferFile } from "../../../domain/transfer.js";
import { ByteCounter } from "../../blobs/byte-streams.js";
import { HashTap } from "../../blobs/hash-tap.js";
import { blobKey } from "../../blobs/keys.js";
import { type BlobStore, BlobTooLargeError } from "../../blobs/port.js";
import { encryptingStage } from "../../security/at-rest.js";
import { randomBase62 } from "../../security/secrets.js";

export const newTransferId = () => `tr_${randomBase62(24)}`;
export const newFileId = () => `f_${randomBase62(16)}`;

/** Decisions 3.22 and 7.3: a file name is a relative path of valid segments (domain/file-names.ts). */
export function checkFileName(name: string, path: string): void {
  const problem = fileNameProblem(name);
  if (problem) throw refuse("INVALID", problem, path);
}

/** One part of a multipart form, as the edge's parser hands it over. */
export type FormPart =
  | { type: "field"; fieldname: string; value: unknown }
  | { type: "file"; fieldname: string; filename: string; mimetype: string; file: Readable };

export interface ReceivedForm {
  fields: Map<string, string[]>;
  files: TransferFile[];
  /** The content key the server encrypted the files under (decisions 5.3), or null. */
  contentKey: Uint8Array | null;
  /** SHA-256 over the fields and files as received, for Idempotency-Key ("" without that header). */
  fingerprint: string;
}

export interface UploadCaps {
  limits: PlanLimits;
  /** Bytes left in the account's storage, or null when unlimited. */
  storageLeft: number | null;
}

/**
 * Decides, when the first file arrives, whether the files are to be encrypted at rest: returns the
 * content key, or null. It sees the fields sent before that file.
 */
export type AtRestKeyFor = (fieldsSoFar: Map<string, string[]>) => Uint8Array | null;

/**
 * Stores one file part: as it comes, or encrypted by the server under `contentKey` (decisions
 * 5.3). The size limit applies to the bytes the client sent: the store enforces it on a plain file;
 * an encrypted one is counted before it grows by its framing. An encrypted file's size is that of
 * its stored ciphertext, as for any encrypted file (5.3), and its salt is its `encryptionIv`. The
 * store answers the stored bytes' SHA-256, which a recipient's receipt must name (decisions 9.5).
 * A plain part without a fingerprint goes to the store as it comes, through no stage at all.
 */
async function storeFile(
  blobs: BlobStore,
  key: string,
  file: Readable,
  contentType: string,
  maxBytes: number | null,
  contentKey: Uint8Array | null,
  fingerprint: Hash | null,
): Promise<{ size: number; encryptionIv: string | null; storedSha256: string }> {
  const counter = contentKey ? new ByteCounter(maxBytes) : null;
  const encrypting = contentKey ? encryptingStage(contentKey) : null;
  const stages: (Transform | Duplex)[] = [
    ...(fingerprint ? [new HashTap(fingerprint)] : []),
    ...(counter && encrypting ? [counter, encrypting.stage] : []),
  ];
  // pipeline() hands back its last stream; an error anywhere (too large included) destroys it.
  const body = stages.length > 0 ? (pipeline([file, ...stages], () => {}) as unknown as Readable) : file;
  const stored = await blobs.put(key, body, {
    maxBytes: counter ? null : maxBytes,
    contentType: encrypting ? "application/octet-stream" : contentType,
  });
  return counter && encrypting
    ? {
        size: encryptedSize(counter.bytes),
        encryptionIv: encrypting.encryptionIv,
        storedSha256: stored.sha256,
      }
    : { size: stored.size, encryptionIv: null, storedSha256: stored.sha256 };
}

const hasNul = (text: string) => text.includes("\u0000");

/**
 * Streams every file of a multipart form into the blob store as it arrives (never whole in
 * memory), cutting a file off at the plan's size or the storage left. On any failure every blob
 * already written is deleted before the error goes on. The fingerprint covers every field and
 * every file's name, type and bytes, not the boundary: a retried upload has the same one.
 */
export async function receiveMultipart(
  parts: AsyncIterable<FormPart>,
  blobs: BlobStore,
  transferId: string,
  caps: UploadCaps,
  atRestKeyFor: AtRestKeyFor,
  fingerprinted: boolean,
): Promise<ReceivedForm> {
  let contentKey: Uint8Array | null | undefined;
  const fields = new Map<string, string[]>();
  const files: TransferFile[] = [];
  // Hashing every byte costs CPU: only a request that may be repeated (Idempotency-Key) pays it.
  const fingerprint = fingerprinted ? createHash("sha256") : null;
  let stored = 0;
  try {
    for await (const part of parts) {
      if (part.type === "field") {
        const value = String(part.value);
        if (hasNul(part.fieldname) || hasNul(value)) {
          throw refuse("INVALID", "text must not contain NUL (U+0000) characters", part.fieldname);
        }
        fields.set(part.fieldname, [...(fields.get(part.fieldname) ?? []), value]);
        fingerprint?.update(`field ${JSON.stringify([part.fieldname, value])}\n`);
        continue;
      }
      if (part.fieldname !== "files") {
        throw refuse("INVALID", `unexpected file field '${part.fieldname}'`, part.fieldname);
      }
      const path = `files[${files.length}]`;
      checkFileName(part.filename, path);
      const fileId = newFileId();
      const maxBytes = uploadAllowance(
        caps.limits,
        caps.storageLeft === null ? null : caps.storageLeft - stored,
      );
      const type = part.mimetype || "application/octet-stream";
      files.push({ fileId, name: part.filename, size: 0, type, encryptionIv: null });
      fingerprint?.update(`file ${JSON.stringify([part.filename, type])}\n`);
      if (contentKey === undefined) contentKey = atRestKeyFor(fields);
      try {
        const key = blobKey(transferId, fileId);
        const { size, encryptionIv, storedSha256 } = await storeFile(
          blobs,
          key,
          part.file,
          type,
          maxBytes,
          contentKey,
          fingerprint,
        );
        const file = files[files.length - 1];
        if (file) Object.assign(file, { size, encryptionIv, storedSha256 });
        stored += size;
      } catch (error) {
        if (!(error instanceof BlobTooLargeError)) throw error;
        throw tooLarge(part.filename, caps.limits, error.maxBytes);
      }
    }
  } catch (error) {
    await blobs.delete(files.map((file) => blobKey(transferId, file.fileId)));
    throw error;
  }
  return { fields, files, contentKey: contentKey ?? null, fingerprint: fingerprint?.digest("hex") ?? "" };
}
