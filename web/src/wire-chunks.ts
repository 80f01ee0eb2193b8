import { createEncryptStream, HEADER_SIZE, RECORD_SIZE, TAG_SIZE } from "@handoff/sdk/crypto";

/**
 * Wire bytes per PATCH. The server keeps every PATCH it acknowledged, so a reload loses at most
 * the one under way; a browser sends a request body from a Blob (a streamed body needs HTTP/2), so
 * this much ciphertext is held in memory at a time (twice that while the next one is sealed ahead,
 * tus-upload.ts).
 */
export const PATCH_BYTES = 4 * 1024 * 1024;
const WIRE_RECORD = RECORD_SIZE + TAG_SIZE;

/**
 * The file's wire bytes from `offset` on, PATCH_BYTES at a time: sealed again from the record
 * holding the offset with the same K and salt (5.3 gives the same bytes), those before the offset
 * left out.
 */
export async function* wireChunks(
  file: Blob,
  contentKey: Uint8Array,
  salt: Uint8Array,
  offset: number,
): AsyncGenerator<Blob> {
  const record = Math.max(0, Math.floor((offset - HEADER_SIZE) / WIRE_RECORD));
  let skip = offset - (record === 0 ? 0 : HEADER_SIZE + record * WIRE_RECORD);
  const { stream } = createEncryptStream(contentKey, {
    salt,
    firstRecord: record,
  });
  const reader = file
    .slice(record * RECORD_SIZE)
    .stream()
    .pipeThrough(stream)
    .getReader();
  let parts: Uint8Array[] = [];
  let held = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const bytes = skip > 0 ? value.subarray(Math.min(skip, value.length)) : value;
    skip = Math.max(0, skip - value.length);
    if (bytes.length === 0) continue;
    parts.push(bytes);
    held += bytes.length;
    if (held >= PATCH_BYTES) {
      yield new Blob(parts as Uint8Array<ArrayBuffer>[]);
      parts = [];
      held = 0;
    }
  }
  if (held > 0) yield new Blob(parts as Uint8Array<ArrayBuffer>[]);
}
