import { randomBytes } from "node:crypto";
import { pipeline, type Readable } from "node:stream";
import type {} from "@fastify/multipart";
import type { FastifyRequest } from "fastify";
import type { TransferFile } from "../../domain/transfer.js";
import { ByteCounter } from "../blobs/filesystem.js";
import { blobKey } from "../blobs/keys.js";
import { type BlobStore, BlobTooLargeError } from "../blobs/port.js";
import { EncryptRecords } from "../security/record-cipher.js";
import { HttpError, validationError } from "./errors.js";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

function randomId(length: number): string {
  const bytes = randomBytes(length);
  return Array.from(bytes, (byte) => BASE62[byte % 62]).join("");
}

export const newTransferId = () => `tr_${randomId(24)}`;
export const newFileId = () => `f_${randomId(16)}`;

/** Decisions 3.22: a file name is 1–255 bytes and never a path. */
export function checkFileName(name: string, path: string): void {
  if (
    name.length === 0 ||
    Buffer.byteLength(name) > 255 ||
    /[/\\]/.test(name) ||
    name === "." ||
    name === ".."
  ) {
    throw validationError("a file name must be 1 to 255 bytes and never a path", path);
  }
}

export const fileTooLarge = (message: string) => new HttpError(413, "FILE_TOO_LARGE", message);

export interface ReceivedForm {
  fields: Map<string, string[]>;
  files: TransferFile[];
  /** The key the files were encrypted under at rest, or null. */
  dataKey: Buffer | null;
}

export interface UploadCaps {
  /** The plan's size limit per file, or null. */
  maxFileSize: number | null;
  /** Bytes left in the account's storage, or null when unlimited. */
  storageLeft: number | null;
}

/**
 * Decides, when the first file arrives, whether the files are to be encrypted at rest: returns the
 * data key, or null. It sees the fields sent before that file.
 */
export type AtRestKeyFor = (fieldsSoFar: Map<string, string[]>) => Buffer | null;

/**
 * Stores one file part: as it comes, or encrypted at rest under `dataKey`. The size limit always
 * applies to the bytes the client sent, and the size returned is theirs, not the ciphertext's.
 */
async function storeFile(
  blobs: BlobStore,
  key: string,
  file: Readable,
  contentType: string,
  maxBytes: number | null,
  dataKey: Buffer | null,
): Promise<number> {
  if (!dataKey) return (await blobs.put(key, file, { maxBytes, contentType })).size;
  const counter = new ByteCounter(maxBytes);
  // pipeline() hands back its last stream; an error anywhere (too large included) destroys it.
  const sealed = pipeline(file, counter, new EncryptRecords(dataKey), () => {});
  await blobs.put(key, sealed, { maxBytes: null, contentType: "application/octet-stream" });
  return counter.bytes;
}

/**
 * Streams every file of a multipart form into the blob store as it arrives (never whole in
 * memory), cutting a file off at the plan's size or the storage left. On any failure every blob
 * already written is deleted before the error goes on.
 */
export async function receiveMultipart(
  request: FastifyRequest,
  blobs: BlobStore,
  transferId: string,
  caps: UploadCaps,
  atRestKeyFor: AtRestKeyFor,
): Promise<ReceivedForm> {
  let dataKey: Buffer | null | undefined;
  const fields = new Map<string, string[]>();
  const files: TransferFile[] = [];
  let stored = 0;
  try {
    for await (const part of request.parts()) {
      if (part.type === "field") {
        fields.set(part.fieldname, [...(fields.get(part.fieldname) ?? []), String(part.value)]);
        continue;
      }
      if (part.fieldname !== "files")
        throw validationError(`unexpected file field '${part.fieldname}'`, part.fieldname);
      checkFileName(part.filename, `files[${files.length}]`);
      const fileId = newFileId();
      const limits = [caps.maxFileSize, caps.storageLeft === null ? null : caps.storageLeft - stored];
      const maxBytes = limits.reduce<number | null>(
        (min, cap) => (cap === null ? min : min === null ? cap : Math.min(min, cap)),
        null,
      );
      files.push({
        fileId,
        name: part.filename,
        size: 0,
        type: part.mimetype || "application/octet-stream",
        encryptionIv: null,
      });
      if (dataKey === undefined) dataKey = atRestKeyFor(fields);
      try {
        const size = await storeFile(
          blobs,
          blobKey(transferId, fileId),
          part.file,
          part.mimetype,
          maxBytes,
          dataKey,
        );
        const file = files[files.length - 1];
        if (file) file.size = size;
        stored += size;
      } catch (error) {
        if (!(error instanceof BlobTooLargeError)) throw error;
        const byPlan = caps.maxFileSize !== null && error.maxBytes === caps.maxFileSize;
        throw fileTooLarge(
          byPlan
            ? `'${part.filename}' is over the plan's maximum file size of ${caps.maxFileSize} bytes`
            : `'${part.filename}' does not fit: the account's storage is full`,
        );
      }
    }
  } catch (error) {
    await blobs.delete(files.map((file) => blobKey(transferId, file.fileId)));
    throw error;
  }
  return { fields, files, dataKey: dataKey ?? null };
}
