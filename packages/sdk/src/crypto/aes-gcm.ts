/**
 * AES-256-GCM, the one primitive of the record stream that must run native. The seam between
 * platforms: the core works with an `AesGcm` (raw key → `AesKey`), WebCrypto by default so it runs
 * in browsers unchanged; the Node SDK passes node:crypto's (src/node-aes-gcm.ts), which does the
 * same work in half the CPU time. Both produce the same bytes (the test vectors run on each).
 */

export const TAG_SIZE = 16;
export const NONCE_SIZE = 12;

/** One imported key. `seal` answers ciphertext ‖ 16-byte tag, no AAD; `open` answers null on a bad tag. */
export interface AesKey {
  seal(nonce: Uint8Array, plaintext: Uint8Array): Promise<Uint8Array>;
  /** The plaintext, or null when the tag does not verify: nothing unauthenticated ever comes out. */
  open(nonce: Uint8Array, sealed: Uint8Array): Promise<Uint8Array | null>;
}

/** Imports a raw 32-byte key. */
export type AesGcm = (raw: Uint8Array) => Promise<AesKey>;

// TypeScript's DOM lib (5.7+) types WebCrypto inputs as views of an ArrayBuffer, not of any
// ArrayBufferLike; every buffer here is an ordinary ArrayBuffer, so the cast only satisfies it.
const bytes = (view: Uint8Array) => view as Uint8Array<ArrayBuffer>;

/** WebCrypto: native in Node and browsers alike, each call run off the main thread. */
export const webAesGcm: AesGcm = async (raw) => {
  const subtle = globalThis.crypto.subtle;
  const key = await subtle.importKey("raw", bytes(raw), "AES-GCM", false, ["encrypt", "decrypt"]);
  return {
    async seal(nonce, plaintext) {
      return new Uint8Array(
        await subtle.encrypt({ name: "AES-GCM", iv: bytes(nonce) }, key, bytes(plaintext)),
      );
    },
    async open(nonce, sealed) {
      if (sealed.length < TAG_SIZE) return null;
      try {
        return new Uint8Array(
          await subtle.decrypt({ name: "AES-GCM", iv: bytes(nonce) }, key, bytes(sealed)),
        );
      } catch (error) {
        // WebCrypto reports a failed tag as an OperationError; anything else is a real fault.
        if (error instanceof Error && error.name === "OperationError") return null;
        throw error;
      }
    },
  };
};
