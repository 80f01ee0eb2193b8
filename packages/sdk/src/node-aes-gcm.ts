import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject } from "node:crypto";
import { type AesGcm, TAG_SIZE } from "./crypto/aes-gcm.js";

const CIPHER = "aes-256-gcm";

/**
 * AES-256-GCM through node:crypto, for the Node SDK's record streams. Synchronous OpenSSL on the
 * calling thread: no copy into a job, no thread hop and no promise per record, which halves the
 * CPU time of WebCrypto's path (the cost `handoff send` and `receive` are measured by, see
 * bench/client-transfer.ts). A record arriving in parts is decrypted part by part, never joined:
 * GCM is a stream cipher, and OpenSSL checks the tag at `final`, before any part is answered.
 * Same bytes as webAesGcm; the crypto core stays free of Node.
 */
export const nodeAesGcm: AesGcm = async (raw) => {
  const key = createSecretKey(raw);
  const sealParts = (nonce: Uint8Array, plaintext: Uint8Array): Uint8Array[] => {
    const cipher = createCipheriv(CIPHER, key, nonce, { authTagLength: TAG_SIZE });
    const body = cipher.update(plaintext);
    cipher.final();
    return [body, cipher.getAuthTag()];
  };
  return {
    async seal(nonce, plaintext) {
      return Buffer.concat(sealParts(nonce, plaintext));
    },
    async sealParts(nonce, plaintext) {
      return sealParts(nonce, plaintext);
    },
    async open(nonce, sealed) {
      const plaintext = openParts(key, nonce, [sealed]);
      return plaintext === null ? null : (plaintext[0] ?? new Uint8Array(0));
    },
    async openParts(nonce, sealed) {
      return openParts(key, nonce, sealed);
    },
    openPartsNow(nonce, sealed) {
      return openParts(key, nonce, sealed);
    },
  };
};

function openParts(key: KeyObject, nonce: Uint8Array, sealed: readonly Uint8Array[]): Uint8Array[] | null {
  let body = sealed.reduce((sum, part) => sum + part.length, 0) - TAG_SIZE;
  if (body < 0) return null;
  const decipher = createDecipheriv(CIPHER, key, nonce, { authTagLength: TAG_SIZE });
  const plaintext: Uint8Array[] = [];
  const tagParts: Uint8Array[] = [];
  for (const part of sealed) {
    const take = Math.min(body, part.length);
    if (take > 0) plaintext.push(decipher.update(take === part.length ? part : part.subarray(0, take)));
    body -= take;
    if (take < part.length) tagParts.push(take === 0 ? part : part.subarray(take));
  }
  // The tag is usually whole in the last part; when cut between parts its 16 bytes are the only ones copied.
  const tag = tagParts.length === 1 ? (tagParts[0] as Uint8Array) : Buffer.concat(tagParts);
  decipher.setAuthTag(tag);
  try {
    // GCM's final() throws exactly when the tag does not verify.
    decipher.final();
  } catch {
    return null;
  }
  return plaintext;
}
