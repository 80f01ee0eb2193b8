import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { NONCE_SIZE, TAG_SIZE, webAesGcm } from "./aes-gcm.js";
import { fromBase64, toBase64 } from "./base64.js";
import { HandoffCryptoError } from "./errors.js";
import { KEY_SIZE, randomBytes, requireKey, x25519PublicKeyOf, x25519SharedSecret } from "./keys.js";

// decisions 5.2: encrypted_key = base64(E ‖ N ‖ C), C = 32 bytes of wrapped K + 16-byte tag.
const WRAP_INFO = new TextEncoder().encode("handoff/v1 key-wrap");
export const ENCRYPTED_KEY_SIZE = KEY_SIZE + NONCE_SIZE + KEY_SIZE + TAG_SIZE;

/** W = HKDF-SHA256(ikm = X25519 shared secret, salt = E ‖ R, info = "handoff/v1 key-wrap"), as an AES key. */
function wrappingKey(
  ownPrivate: Uint8Array,
  peerPublic: Uint8Array,
  ephemeralPublic: Uint8Array,
  recipientPublic: Uint8Array,
) {
  const salt = new Uint8Array(2 * KEY_SIZE);
  salt.set(ephemeralPublic, 0);
  salt.set(recipientPublic, KEY_SIZE);
  const shared = x25519SharedSecret(ownPrivate, peerPublic);
  // 48 bytes each way: WebCrypto everywhere, there is nothing to gain from a faster path.
  return webAesGcm(hkdf(sha256, shared, salt, WRAP_INFO, KEY_SIZE));
}

/**
 * Wraps the content key to the recipient's X25519 public key with a fresh ephemeral key pair.
 * `fixed` pins the ephemeral key and nonce, for published test vectors only.
 */
export async function wrapContentKey(
  contentKey: Uint8Array,
  recipientPublicKey: Uint8Array,
  fixed?: { ephemeralPrivateKey: Uint8Array; nonce: Uint8Array },
): Promise<string> {
  requireKey(contentKey, "content key");
  const ephemeralPrivate = fixed?.ephemeralPrivateKey ?? randomBytes(KEY_SIZE);
  const nonce = fixed?.nonce ?? randomBytes(NONCE_SIZE);
  if (nonce.length !== NONCE_SIZE)
    throw new HandoffCryptoError("BAD_ENCODING", `nonce must be ${NONCE_SIZE} bytes`);
  const ephemeralPublic = x25519PublicKeyOf(ephemeralPrivate);
  const key = await wrappingKey(ephemeralPrivate, recipientPublicKey, ephemeralPublic, recipientPublicKey);
  const sealed = await key.seal(nonce, contentKey);
  const out = new Uint8Array(ENCRYPTED_KEY_SIZE);
  out.set(ephemeralPublic, 0);
  out.set(nonce, KEY_SIZE);
  out.set(sealed, KEY_SIZE + NONCE_SIZE);
  return toBase64(out);
}

/** Recovers the content key; BAD_KEY when it was not wrapped to this private key (or was altered). */
export async function unwrapContentKey(
  encryptedKey: string,
  recipientPrivateKey: Uint8Array,
): Promise<Uint8Array> {
  const bytes = fromBase64(encryptedKey);
  if (bytes.length !== ENCRYPTED_KEY_SIZE) {
    throw new HandoffCryptoError("BAD_ENCODING", `encrypted_key must be ${ENCRYPTED_KEY_SIZE} bytes`);
  }
  const ephemeralPublic = bytes.subarray(0, KEY_SIZE);
  const nonce = bytes.subarray(KEY_SIZE, KEY_SIZE + NONCE_SIZE);
  const sealed = bytes.subarray(KEY_SIZE + NONCE_SIZE);
  const recipientPublic = x25519PublicKeyOf(recipientPrivateKey);
  const key = await wrappingKey(recipientPrivateKey, ephemeralPublic, ephemeralPublic, recipientPublic);
  const contentKey = await key.open(nonce, sealed);
  if (!contentKey) {
    throw new HandoffCryptoError(
      "BAD_KEY",
      "the content key is not wrapped to this private key, or was altered",
    );
  }
  return contentKey;
}
