/**
 * The one crypto core of Handoff (decisions 5.1–5.4), for Node 20 and browsers alike: WebCrypto
 * for AES-256-GCM (or an implementation passed in: the Node SDK passes node:crypto's) and
 * randomness, @noble for X25519, Ed25519 and HKDF-SHA256, web streams for the record stream (or
 * RecordDecryptor fed chunk by chunk, which the Node SDK's receive uses without a stream hop).
 * No Node-only APIs here.
 */
export { type AesGcm, type AesKey, TAG_SIZE, webAesGcm } from "./aes-gcm.js";
export { fromBase64, toBase64 } from "./base64.js";
export { createDecryptStream, RecordDecryptor } from "./decrypt-stream.js";
export { createEncryptStream } from "./encrypt-stream.js";
export { HandoffCryptoError, type HandoffCryptoErrorCode } from "./errors.js";
export { ENCRYPTED_KEY_SIZE, unwrapContentKey, wrapContentKey } from "./key-wrap.js";
export {
  ed25519PublicKeyOf,
  generateEd25519KeyPair,
  generateX25519KeyPair,
  type KeyPair,
  keyFingerprint,
  newContentKey,
  x25519PublicKeyOf,
} from "./keys.js";
export {
  encryptedSize,
  HEADER_SIZE,
  MAX_RECORD_SIZE,
  MIN_RECORD_SIZE,
  plainSizeOf,
  RECORD_SIZE,
  recordCount,
  SALT_SIZE,
} from "./record-format.js";
export { type SignedTransfer, signatureMessage, signTransfer, verifyTransfer } from "./signature.js";
