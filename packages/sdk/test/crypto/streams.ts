// Test helpers: feed bytes through the record streams in awkward chunk sizes and collect what comes out.
import { type AesGcm, createDecryptStream, createEncryptStream, nodeAesGcm, webAesGcm } from "@handoff/sdk";
import { expect } from "vitest";

/** Chunk sizes that never line up with the 24-byte header or the 65,536/65,552-byte records. */
export const ODD_CHUNKS = [1, 7, 23, 1000, 65_537, 13, 99_991, 65_551];

export function patterned(size: number, seed = 0): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + seed + (i >>> 8)) & 0xff;
  return bytes;
}

export function streamOf(bytes: Uint8Array, chunkSizes: number[] = ODD_CHUNKS): ReadableStream<Uint8Array> {
  let offset = 0;
  let turn = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      const size = chunkSizes[turn++ % chunkSizes.length] ?? 1;
      controller.enqueue(bytes.slice(offset, offset + size));
      offset += size;
    },
  });
}

export async function collect(
  stream: ReadableStream<Uint8Array>,
): Promise<{ bytes: Uint8Array; error?: unknown }> {
  const chunks: Uint8Array[] = [];
  const reader = stream.getReader();
  let error: unknown;
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(r.value);
  } catch (caught) {
    error = caught;
  }
  return { bytes: concat(chunks), error };
}

export function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/** Both AES-GCM implementations: every record-stream test runs on each, as they must give the same bytes. */
export const AES_IMPLEMENTATIONS: [string, AesGcm][] = [
  ["WebCrypto", webAesGcm],
  ["node:crypto", nodeAesGcm],
];

export async function encrypt(
  contentKey: Uint8Array,
  plaintext: Uint8Array,
  fixed?: { salt?: Uint8Array; recordSize?: number },
  aes: AesGcm = webAesGcm,
): Promise<{ encryptionIv: string; ciphertext: Uint8Array }> {
  const { encryptionIv, stream } = createEncryptStream(contentKey, fixed, aes);
  const { bytes, error } = await collect(streamOf(plaintext).pipeThrough(stream));
  if (error) throw error;
  return { encryptionIv, ciphertext: bytes };
}

/** What a reader saw before the stream ended or errored: the plaintext emitted, and the error. */
export function decrypt(
  contentKey: Uint8Array,
  encryptionIv: string,
  ciphertext: Uint8Array,
  chunkSizes?: number[],
  aes: AesGcm = webAesGcm,
) {
  return collect(
    streamOf(ciphertext, chunkSizes).pipeThrough(createDecryptStream(contentKey, encryptionIv, aes)),
  );
}

/** encrypt and decrypt bound to one AES-GCM implementation. */
export function recordStreams(aes: AesGcm) {
  return {
    encrypt: (
      contentKey: Uint8Array,
      plaintext: Uint8Array,
      fixed?: { salt?: Uint8Array; recordSize?: number },
    ) => encrypt(contentKey, plaintext, fixed, aes),
    decrypt: (contentKey: Uint8Array, encryptionIv: string, ciphertext: Uint8Array, chunkSizes?: number[]) =>
      decrypt(contentKey, encryptionIv, ciphertext, chunkSizes, aes),
  };
}

/** A copy of `bytes` with one bit of byte `index` flipped. */
export function flipped(bytes: Uint8Array, index: number, mask = 1): Uint8Array {
  const copy = bytes.slice();
  copy[index] = (copy[index] ?? 0) ^ mask;
  return copy;
}

/** Byte-for-byte equality; vitest's deep toEqual takes seconds on arrays of hundreds of KB. */
export function expectBytes(actual: Uint8Array, expected: Uint8Array): void {
  expect(actual.length, "length").toBe(expected.length);
  expect(
    actual.findIndex((byte, i) => byte !== expected[i]),
    "first differing byte",
  ).toBe(-1);
}
