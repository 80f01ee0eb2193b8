/**
 * bench/request-page.ts's baseline: a stand-in for web/src/wire-chunks.ts, swapped in by a build of
 * its own (never served to anyone), that sends the file's own bytes without encrypting them. It
 * sends as many bytes as the encrypted file has (the file, then zeros to its wire size), in the
 * same PATCHes, so the two runs differ by the encryption alone.
 */
import { encryptedSize } from "@handoff/sdk/crypto";
import { PATCH_BYTES } from "../web/src/wire-chunks.js";

export async function* wireChunks(
  file: Blob,
  _contentKey: Uint8Array,
  _salt: Uint8Array,
  offset: number,
): AsyncGenerator<Blob> {
  const wire = encryptedSize(file.size);
  for (let at = offset; at < wire; at += PATCH_BYTES) {
    const end = Math.min(at + PATCH_BYTES, wire);
    const parts: (Blob | Uint8Array<ArrayBuffer>)[] = [];
    if (at < file.size) parts.push(file.slice(at, Math.min(end, file.size)));
    if (end > file.size) parts.push(new Uint8Array(end - Math.max(at, file.size)));
    yield new Blob(parts);
  }
}
