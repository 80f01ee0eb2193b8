import type { Readable } from "node:stream";
import type { ResumableUploads } from "./resumable/uploads.js";

/** What a store may throw is part of its port; the classes live in a leaf module so resumable/ can throw them without a circle. */
export { BlobNotFoundError, BlobTooLargeError } from "./errors.js";

/** What a put stored: its size and the SHA-256 of its bytes (hex). */
export interface StoredBlob {
  size: number;
  sha256: string;
}

/** Where file data lives: the local filesystem (embedded default) or S3. Contract: test/contract/blob-store.contract.ts. */
export interface BlobStore {
  /**
   * Streams `body` into `key` with backpressure, never holding it whole. More than `maxBytes`
   * rejects with BlobTooLargeError and leaves nothing behind; so does any other failure. Answers
   * the stored bytes' size and lowercase hex SHA-256, which a receipt names (decisions 9.5).
   */
  put(
    key: string,
    body: Readable,
    options: { maxBytes: number | null; contentType?: string },
  ): Promise<StoredBlob>;
  /** Streams a blob, or the inclusive byte range `start`–`end` of it; BlobNotFoundError when missing. */
  get(key: string, range?: ByteRange): Promise<Readable>;
  /**
   * Opens a blob to serve it: its size first (to answer a Range header), then its bytes, from the
   * one look-up (on the filesystem the open file, where a stat and a get were a look-up each).
   * null when missing.
   */
  open(key: string): Promise<OpenedBlob | null>;
  /** Size of a stored blob, or null. */
  stat(key: string): Promise<{ size: number } | null>;
  /** Deletes blobs; missing ones are not an error. */
  delete(keys: string[]): Promise<void>;
  /** Where a client may PUT this blob, or drive a tus upload of it, without credentials until `expiresAt`. */
  uploadUrl(key: string, options: UploadUrlOptions): Promise<PresignedRequest>;
  /** The tus upload resources behind `resumableUrl` (decisions 7.1). */
  readonly resumable: ResumableUploads;
  /** Where a client may GET this blob (honouring Range) without credentials until `expiresAt`. */
  downloadUrl(key: string, options: DownloadUrlOptions): Promise<string>;
  /** Answers when the store is reachable. */
  ping(): Promise<void>;
  /** Bytes still free where the blobs are written, for a store on a disk of this machine's. */
  freeBytes?(): Promise<number>;
  /** Lets go of what the store holds open (the filesystem store's lease on its folder). */
  close?(): Promise<void> | void;
  /**
   * What a crash may have left: offered by a store that can list itself (the filesystem store; an
   * S3 bucket's lifecycle rules abort its incomplete uploads). See src/housekeeping/leftovers.ts.
   */
  leftovers?: LeftoverScan;
}

/**
 * A blob up to this size is small: stored and read whole, and a download sends it as one buffer.
 * Most handoffs are small, and for them a stream's machinery (and a trip through a thread pool per
 * file system call) cost several times their bytes (issue 21). Larger ones stream.
 */
export const SMALL_BLOB_BYTES = 64 * 1024;

/** A blob opened to be served: read it once, or close it unread. */
export interface OpenedBlob {
  size: number;
  /** Streams the blob, or the inclusive range `start`–`end` of it: the start inside it, the end clamped to its size. */
  read(range?: ByteRange): Promise<Readable>;
  /**
   * The same bytes as `read`, whole in memory, and the blob closed: for a small blob, where a
   * stream's machinery costs more than its bytes.
   */
  bytes(range?: ByteRange): Promise<Buffer>;
  /** Lets go of a blob that will not be read. */
  close(): Promise<void>;
}

/** The blobs stored under one key prefix (a transfer's directory). */
export interface StoredGroup {
  /** The prefix's last segment: the transfer id. */
  name: string;
  keys: string[];
  /** When the newest blob in it was written (ms since the epoch). */
  newestWriteMs: number;
  /** Whether a put that may still run (this process's, or a live instance's) is writing under it. */
  writing: boolean;
}

export interface LeftoverScan {
  /** Removes the temporary files of puts that no longer run (in any instance); returns how many. */
  removeAbandonedParts(): Promise<number>;
  /** Every group of blobs under `prefix`. */
  groups(prefix: string): Promise<StoredGroup[]>;
  /** Whether another live instance writes into the same store (a shared folder). */
  othersWriting(): Promise<boolean>;
}

export interface ByteRange {
  start: number;
  end: number;
}

export interface UploadUrlOptions {
  size: number;
  contentType: string;
  expiresAt: Date;
}

export interface DownloadUrlOptions {
  expiresAt: Date;
  fileName: string;
  contentType: string;
}

export interface PresignedRequest {
  url: string;
  method: "PUT";
  headers: Record<string, string>;
  /** This service's tus upload URL for the same blob: `url` itself without S3. */
  resumableUrl: string;
}
