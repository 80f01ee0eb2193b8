const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** True for canonical base64 of exactly 32 raw bytes: an X25519 or Ed25519 public key. */
export function isBase64Key32(value: string): boolean {
  return BASE64.test(value) && Buffer.from(value, "base64").length === 32;
}
