import { HandoffCryptoError } from "./errors.js";

// Standard alphabet, padded (decisions 5). atob/btoa exist in Node 20 and every browser.
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Strict: refuses missing padding, whitespace, the URL-safe alphabet and non-zero spare bits. */
export function fromBase64(text: string): Uint8Array {
  if (!CANONICAL_BASE64.test(text)) throw notBase64();
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  // "QR==" decodes like "QQ==": only the canonical spelling of each byte string is accepted.
  if (toBase64(bytes) !== text) throw notBase64();
  return bytes;
}

function notBase64(): HandoffCryptoError {
  return new HandoffCryptoError("BAD_ENCODING", "not canonical padded standard base64");
}
