import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { type AesGcm, type AesKey, NONCE_SIZE, TAG_SIZE } from "./aes-gcm.js";
import { HandoffCryptoError } from "./errors.js";
import { KEY_SIZE, requireKey } from "./keys.js";

// decisions 5.3: header = "HOE1" ‖ record size (uint32 BE) ‖ 16-byte salt; then the records.
export const RECORD_SIZE = 65536;
export const HEADER_SIZE = 24;
export const SALT_SIZE = 16;
export const MIN_RECORD_SIZE = 1024;
export const MAX_RECORD_SIZE = 16 * 1024 * 1024;
const MAGIC = [0x48, 0x4f, 0x45, 0x31]; // "HOE1"
const FILE_INFO = new TextEncoder().encode("handoff/v1 file");

/** Bytes on the wire for a file of `plainSize` bytes: 24 + size + 16 × max(1, ceil(size / recordSize)). */
export function encryptedSize(plainSize: number, recordSize = RECORD_SIZE): number {
  if (!Number.isSafeInteger(plainSize) || plainSize < 0)
    throw new RangeError("plainSize must be a byte count");
  requireRecordSize(recordSize);
  return HEADER_SIZE + plainSize + TAG_SIZE * recordCount(plainSize, recordSize);
}

/** The plaintext size of a file of `wireSize` bytes on the wire with the default record size. */
export function plainSizeOf(wireSize: number): number {
  const body = Math.max(0, wireSize - HEADER_SIZE);
  const records = Math.max(1, Math.ceil(body / (RECORD_SIZE + TAG_SIZE)));
  return Math.max(0, body - TAG_SIZE * records);
}

export function recordCount(plainSize: number, recordSize = RECORD_SIZE): number {
  return Math.max(1, Math.ceil(plainSize / recordSize));
}

export function requireRecordSize(recordSize: number): number {
  if (!Number.isInteger(recordSize) || recordSize < MIN_RECORD_SIZE || recordSize > MAX_RECORD_SIZE) {
    throw new HandoffCryptoError(
      "BAD_RECORD_SIZE",
      `record size ${recordSize} is outside ${MIN_RECORD_SIZE}–${MAX_RECORD_SIZE} bytes`,
    );
  }
  return recordSize;
}

export function fileKey(aes: AesGcm, contentKey: Uint8Array, salt: Uint8Array): Promise<AesKey> {
  return aes(hkdf(sha256, requireKey(contentKey, "content key"), salt, FILE_INFO, KEY_SIZE));
}

export function encodeHeader(recordSize: number, salt: Uint8Array): Uint8Array {
  const header = new Uint8Array(HEADER_SIZE);
  header.set(MAGIC, 0);
  new DataView(header.buffer).setUint32(4, recordSize);
  header.set(salt, 8);
  return header;
}

/** Checks a complete header against the salt the transfer announced; returns the record size. */
export function parseHeader(header: Uint8Array, expectedSalt: Uint8Array): number {
  if (!hasMagic(header)) throw badMagic();
  const recordSize = requireRecordSize(new DataView(header.buffer, header.byteOffset, 8).getUint32(4));
  if (!sameBytes(header.subarray(8, HEADER_SIZE), expectedSalt)) {
    throw new HandoffCryptoError("SALT_MISMATCH", "the file's salt differs from its encryption_iv");
  }
  return recordSize;
}

/** False as soon as the bytes seen so far cannot start "HOE1". */
export function hasMagic(prefix: Uint8Array): boolean {
  return MAGIC.every((byte, i) => i >= prefix.length || prefix[i] === byte);
}

export function badMagic(): HandoffCryptoError {
  return new HandoffCryptoError("BAD_MAGIC", "not a Handoff encrypted file (no HOE1 header)");
}

/**
 * Record i's nonce: i as 11-byte big-endian ‖ flag (0x01 on the last record). Written byte by
 * byte: a DataView needs the array's `.buffer`, which makes V8 move a small array's bytes off its
 * heap into a buffer of their own, once per record (70 ms of a 512 MiB receive; 2 ms now).
 */
export function recordNonce(index: number, last: boolean): Uint8Array {
  const nonce = new Uint8Array(NONCE_SIZE);
  let low = index >>> 0;
  let high = Math.floor(index / 2 ** 32);
  for (let at = 10; at >= 7; at--, low >>>= 8) nonce[at] = low & 0xff;
  for (let at = 6; at >= 3; at--, high >>>= 8) nonce[at] = high & 0xff;
  nonce[11] = last ? 1 : 0;
  return nonce;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}
