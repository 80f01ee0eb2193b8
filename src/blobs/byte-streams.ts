import type { FileHandle } from "node:fs/promises";
import { Transform, type TransformCallback, Writable } from "node:stream";
import { BlobTooLargeError } from "./errors.js";
import type { ByteRange } from "./port.js";

/**
 * Bytes moved per chunk along file streams. Fewer, larger buffers than Node's 16–64 KiB defaults
 * mean far less garbage per GiB (bench/: download CPU per GiB fell by about half); a few MiB per
 * transfer in flight is the price.
 */
export const STREAM_CHUNK = 1 << 20;

/**
 * Passes bytes through and counts them; fails with BlobTooLargeError as soon as the count goes
 * over `maxBytes` (null: no limit), so a too-large body is refused without being read to its end.
 */
export class ByteCounter extends Transform {
  bytes = 0;

  constructor(private readonly maxBytes: number | null) {
    super({ highWaterMark: STREAM_CHUNK });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.maxBytes !== null && this.bytes > this.maxBytes) callback(new BlobTooLargeError(this.maxBytes));
    else callback(null, chunk);
  }
}

/**
 * Bytes a put writes between two data syncs it starts in the background. A blob must be on disk
 * before it is renamed into place; syncing only at the end left the whole file dirty in the page
 * cache (the kernel starts write-back on its own only past 10 % of memory), so the final fsync
 * wrote all of it while the client waited for its answer. Syncing as the bytes come overlaps that
 * write-back with the receiving, and leaves the final fsync at most this much to write (1 GiB
 * written and fsynced from memory here: about 470 ms syncing at the end, 330–380 ms this way).
 */
const SYNC_EVERY = 32 << 20;

/**
 * The end of a put: writes what it is given to an open file, the chunks that queued up during a
 * write in one writev (up to its STREAM_CHUNK high-water mark), counting them and refusing them
 * past `maxBytes` (null: no limit) with BlobTooLargeError before any of them is written. Every
 * SYNC_EVERY bytes a data sync runs beside the writes; the file is fsynced before the stream
 * finishes. The caller owns the handle (and closes it: closing waits for a sync still running).
 */
export class FileSink extends Writable {
  bytes = 0;
  private unsynced = 0;
  private syncing: Promise<void> | null = null;
  private syncError: Error | null = null;
  private writing: Promise<void> = Promise.resolve();

  /** `onSynced` hears how many bytes are on disk after each background sync (a resumable upload commits them). */
  constructor(
    private readonly file: FileHandle,
    private readonly maxBytes: number | null,
    private readonly onSynced: ((bytes: number) => void) | null = null,
  ) {
    super({ highWaterMark: STREAM_CHUNK });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.writing = this.append([chunk]);
    this.writing.then(() => callback(), callback);
  }

  override _writev(
    chunks: { chunk: Buffer; encoding: BufferEncoding }[],
    callback: (error?: Error | null) => void,
  ): void {
    this.writing = this.append(chunks.map(({ chunk }) => chunk));
    this.writing.then(() => callback(), callback);
  }

  /** Waits for the write and the sync still running when the stream failed: the file then holds what was written. */
  async idle(): Promise<void> {
    await this.writing.catch(() => {});
    await this.syncing;
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.settle()
      .then(() => this.file.sync())
      .then(() => callback(), callback);
  }

  private async append(buffers: Buffer[]): Promise<void> {
    if (this.syncError) throw this.syncError;
    const length = buffers.reduce((sum, buffer) => sum + buffer.length, 0);
    this.bytes += length;
    if (this.maxBytes !== null && this.bytes > this.maxBytes) throw new BlobTooLargeError(this.maxBytes);
    let left = buffers;
    while (left.length > 0) {
      const { bytesWritten } = await this.file.writev(left);
      left = unwritten(left, bytesWritten);
    }
    this.unsynced += length;
    if (this.unsynced >= SYNC_EVERY && !this.syncing) {
      this.unsynced = 0;
      const written = this.bytes;
      this.syncing = this.file.datasync().then(
        () => {
          this.syncing = null;
          this.onSynced?.(written);
        },
        (error: Error) => {
          this.syncing = null;
          this.syncError = error;
        },
      );
    }
  }

  /** Waits for the background sync, if one runs; its failure fails the put. */
  private async settle(): Promise<void> {
    await this.syncing;
    if (this.syncError) throw this.syncError;
  }
}

/** What is left of `buffers` once their first `written` bytes are on disk (a short writev). */
export function unwritten(buffers: Buffer[], written: number): Buffer[] {
  let skip = written;
  let index = 0;
  while (index < buffers.length && skip >= (buffers[index] as Buffer).length) {
    skip -= (buffers[index] as Buffer).length;
    index++;
  }
  const rest = buffers.slice(index);
  if (skip > 0 && rest[0]) rest[0] = rest[0].subarray(skip);
  return rest;
}

/** Checks an inclusive byte range; the end may lie past the last byte (clamped, as S3 does). */
export function checkRange(range: ByteRange): void {
  const { start, end } = range;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start)
    throw new RangeError(`invalid byte range ${start}-${end}`);
}
