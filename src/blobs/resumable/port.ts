import type { Readable } from "node:stream";
import { BlobTooLargeError } from "../errors.js";

/**
 * One file of a presigned transfer as a tus upload resource (decisions 7.1): its blob key, the
 * size the presigned create declared, its media type and when its upload link expires.
 */
export interface UploadTarget {
  key: string;
  length: number;
  contentType: string;
  expiresAt: Date;
}

/** A checksum a PATCH declared for its body (tus `checksum` extension). */
export interface DeclaredChecksum {
  algorithm: ChecksumAlgorithm;
  /** The raw digest, decoded from the header's base64. */
  digest: Buffer;
}

export type ChecksumAlgorithm = "sha1" | "sha256";
export const CHECKSUM_ALGORITHMS: readonly ChecksumAlgorithm[] = ["sha1", "sha256"];

export interface AppendRequest {
  /** The Upload-Offset the client sent: where its bytes start. */
  offset: number;
  body: Readable;
  checksum: DeclaredChecksum | null;
  /**
   * Whether the store may make bytes durable and count them before the request ends (every
   * few MiB), so that a crash mid-request loses little. Only for a request that cannot fail as a
   * whole afterwards: no checksum, and a Content-Length that fits.
   */
  interimCommits: boolean;
}

/**
 * Where a tus upload's bytes go (the filesystem store or S3). Every method runs under the
 * upload's lock (src/blobs/resumable/uploads.ts): a store never sees two calls on one key at once.
 * Bytes past the committed offset (a crash mid-request) are never counted: the offset moves only
 * when they are durable.
 */
export interface ResumableStore {
  /** The committed offset, or "terminated". An upload of a complete blob is at its size. */
  offset(target: UploadTarget): Promise<number | "terminated">;
  /**
   * Appends the body at `offset` and returns the new committed offset; at the declared length the
   * blob is stored at its key, where confirm finds it. Throws OffsetMismatchError before reading a
   * byte, ChecksumMismatchError and BlobTooLargeError keeping nothing of the request,
   * UploadTerminatedError. A body that breaks off keeps what arrived (committed before it throws).
   */
  append(target: UploadTarget, request: AppendRequest): Promise<number>;
  /** Removes the upload's bytes (a stored blob included) and leaves a tombstone until it expires. */
  terminate(target: UploadTarget): Promise<void>;
  /** Removes the uploads (partial bytes and tombstones) whose link expired before `now`, except `busy` ones. */
  purgeExpired(now: Date, busy: (key: string) => boolean): Promise<number>;
  /** Removes whatever upload state these blob keys have (the transfer's files are deleted). */
  remove(keys: string[]): Promise<void>;
}

/** The answer to a PATCH on an upload that is whole already: an empty body fits, any byte is too many. */
export async function nothingMoreFits(body: Readable, length: number): Promise<number> {
  for await (const chunk of body as AsyncIterable<Buffer>) {
    if (chunk.length > 0) throw new BlobTooLargeError(length);
  }
  return length;
}

export class OffsetMismatchError extends Error {
  constructor(readonly offset: number) {
    super(`the upload is at offset ${offset}`);
    this.name = "OffsetMismatchError";
  }
}

export class ChecksumMismatchError extends Error {
  constructor(readonly algorithm: ChecksumAlgorithm) {
    super(`the body does not match its ${algorithm} checksum`);
    this.name = "ChecksumMismatchError";
  }
}

export class UploadTerminatedError extends Error {
  constructor() {
    super("this upload was terminated");
    this.name = "UploadTerminatedError";
  }
}

export class UploadLockedError extends Error {
  constructor() {
    super("another request is writing this upload");
    this.name = "UploadLockedError";
  }
}
