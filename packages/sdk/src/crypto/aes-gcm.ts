// AES-256-GCM through WebCrypto, so it runs native in Node and in browsers alike.

export type AesKey = Awaited<ReturnType<typeof globalThis.crypto.subtle.importKey>>;

export const TAG_SIZE = 16;
export const NONCE_SIZE = 12;

// TypeScript's DOM lib (5.7+) types WebCrypto inputs as views of an ArrayBuffer, not of any
// ArrayBufferLike; every buffer here is an ordinary ArrayBuffer, so the cast only satisfies it.
const bytes = (view: Uint8Array) => view as Uint8Array<ArrayBuffer>;

export function importAesKey(raw: Uint8Array): Promise<AesKey> {
  return globalThis.crypto.subtle.importKey("raw", bytes(raw), "AES-GCM", false, ["encrypt", "decrypt"]);
}

/** Ciphertext followed by the 16-byte tag, no AAD. */
export async function aesGcmSeal(key: AesKey, nonce: Uint8Array, plaintext: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(
    await globalThis.crypto.subtle.encrypt({ name: "AES-GCM", iv: bytes(nonce) }, key, bytes(plaintext)),
  );
}

/** The plaintext, or null when the tag does not verify: nothing unauthenticated ever comes out. */
export async function aesGcmOpen(
  key: AesKey,
  nonce: Uint8Array,
  sealed: Uint8Array,
): Promise<Uint8Array | null> {
  if (sealed.length < TAG_SIZE) return null;
  try {
    return new Uint8Array(
      await globalThis.crypto.subtle.decrypt({ name: "AES-GCM", iv: bytes(nonce) }, key, bytes(sealed)),
    );
  } catch (error) {
    // WebCrypto reports a failed tag as an OperationError; anything else is a real fault.
    if (error instanceof Error && error.name === "OperationError") return null;
    throw error;
  }
}
