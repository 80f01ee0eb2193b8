import { open } from "node:fs/promises";
import { HandoffError } from "./errors.js";

/**
 * Bytes read from a file at a time: 16 records of decisions 5.3, so every read but the last is a
 * whole number of records, and 1,024 reads a GiB instead of the 16,384 of a 64 KiB read stream
 * (which cost about three times the CPU time, mostly in the thread-pool round trips).
 */
export const FILE_CHUNK_BYTES = 1024 * 1024;

/**
 * A file's bytes as they are sent, from byte `start` on (a resumed upload), one fresh chunk of
 * FILE_CHUNK_BYTES a batch (the connection keeps it until written), checked against the size it
 * had when the upload was declared; see readFileChunks.
 */
export async function* sizedFileBatches(
  path: string,
  size: number,
  onBytes: (bytes: number) => void,
  start = 0,
): AsyncGenerator<readonly Uint8Array[]> {
  const fresh = (length: number) => Buffer.allocUnsafeSlow(length);
  for await (const chunk of readFileChunks(path, size, onBytes, fresh, start)) yield [chunk];
}

/**
 * A file read from byte `start` in chunks of FILE_CHUNK_BYTES (the last one shorter) into the
 * buffers `bufferFor` gives, telling `onBytes` the position reached after each chunk. The next chunk is read while the
 * consumer works on this one, so a consumer that reuses buffers needs two. A file that grows or
 * shrinks meanwhile (it would no longer match its Content-Length or signed size) fails the read
 * with FILE_CHANGED.
 */
export async function* readFileChunks(
  path: string,
  size: number,
  onBytes: (bytes: number) => void,
  bufferFor: (length: number) => Uint8Array,
  start = 0,
): AsyncGenerator<Uint8Array> {
  const changed = () =>
    new HandoffError(
      "FILE_CHANGED",
      `${path} changed size while it was being sent (${size} bytes when it started)`,
    );
  const handle = await open(path, "r");
  const readAt = async (position: number): Promise<Uint8Array> => {
    const chunk = bufferFor(Math.min(FILE_CHUNK_BYTES, size - position));
    for (let filled = 0; filled < chunk.length; ) {
      const { bytesRead } = await handle.read(chunk, filled, chunk.length - filled, position + filled);
      if (bytesRead === 0) throw changed();
      filled += bytesRead;
    }
    return chunk;
  };
  // A read ahead can fail while the consumer still holds the previous chunk: marked handled here,
  // so Node does not take it for an unhandled rejection; the `await` below still throws it.
  const readAhead = (position: number) => {
    const read = readAt(position);
    read.catch(() => {});
    return read;
  };
  let ahead: Promise<Uint8Array> | null = start < size ? readAhead(start) : null;
  try {
    for (let position = start; ahead; ) {
      const chunk = await ahead;
      position += chunk.length;
      ahead = position < size ? readAhead(position) : null;
      onBytes(position);
      yield chunk;
    }
    // The declared size is read: one more byte means the file grew.
    const { bytesRead } = await handle.read(Buffer.alloc(1), 0, 1, size);
    if (bytesRead !== 0) throw changed();
  } finally {
    // A consumer that stops early leaves a read in flight: it ends before the file is closed.
    await ahead?.catch(() => {});
    await handle.close();
  }
}

/** `batches` without their first `count` bytes (views, nothing copied): a resume mid-record. */
export async function* skipBytes(
  batches: AsyncIterable<readonly Uint8Array[]>,
  count: number,
): AsyncGenerator<readonly Uint8Array[]> {
  let left = count;
  for await (const batch of batches) {
    if (left === 0) {
      yield batch;
      continue;
    }
    const kept: Uint8Array[] = [];
    for (const part of batch) {
      if (left >= part.length) left -= part.length;
      else {
        kept.push(part.subarray(left));
        left = 0;
      }
    }
    if (kept.length > 0) yield kept;
  }
}
