import { createCipheriv, createDecipheriv, createSecretKey } from "node:crypto";
import { type AesGcm, TAG_SIZE } from "./crypto/aes-gcm.js";

const CIPHER = "aes-256-gcm";

/**
 * AES-256-GCM through node:crypto, for the Node SDK's record streams. Synchronous OpenSSL on the
 * calling thread: no copy into a job, no thread hop and no promise per record, which halves the
 * CPU time of WebCrypto's path (the cost `handoff send` and `receive` are measured by, see
 * bench/client-transfer.ts). Same bytes as webAesGcm; the crypto core stays free of Node.
 */
export const nodeAesGcm: AesGcm = async (raw) => {
  const key = createSecretKey(raw);
  return {
    async seal(nonce, plaintext) {
      const cipher = createCipheriv(CIPHER, key, nonce, { authTagLength: TAG_SIZE });
      const body = cipher.update(plaintext);
      cipher.final();
      return Buffer.concat([body, cipher.getAuthTag()]);
    },
    async open(nonce, sealed) {
      if (sealed.length < TAG_SIZE) return null;
      const split = sealed.length - TAG_SIZE;
      const decipher = createDecipheriv(CIPHER, key, nonce, { authTagLength: TAG_SIZE });
      decipher.setAuthTag(sealed.subarray(split));
      const plaintext = decipher.update(sealed.subarray(0, split));
      try {
        // GCM's final() throws exactly when the tag does not verify.
        decipher.final();
      } catch {
        return null;
      }
      return plaintext;
    },
  };
};
