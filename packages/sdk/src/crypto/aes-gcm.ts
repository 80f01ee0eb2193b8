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
  /**
   * `seal` answering ciphertext ‖ tag as consecutive parts: an implementation whose ciphertext and
   * tag come out separately hands both on unjoined (the Node SDK writes a read's records to the
   * connection with one writev, never copying them into one buffer).
   */
  sealParts(nonce: Uint8Array, plaintext: Uint8Array): Promise<Uint8Array[]>;
  /** The plaintext, or null when the tag does not verify: nothing unauthenticated ever comes out. */
  open(nonce: Uint8Array, sealed: Uint8Array): Promise<Uint8Array | null>;
  /**
   * `open` on ciphertext ‖ tag given as consecutive parts (views of the chunks as they came off the
   * network), answering the plaintext in parts. An implementation that can decrypt piece by piece
   * does so without joining them; still nothing comes out before the tag has verified.
   */
  openParts(nonce: Uint8Array, sealed: readonly Uint8Array[]): Promise<Uint8Array[] | null>;
  /**
   * `openParts` answered in the call, offered by implementations that finish a record at once
   * (node:crypto): the record stream then opens each record as it is cut, without a queue of
   * jobs or a promise per record.
   */
  openPartsNow?(nonce: Uint8Array, sealed: readonly Uint8Array[]): Uint8Array[] | null;
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
  const open = async (nonce: Uint8Array, sealed: Uint8Array): Promise<Uint8Array | null> => {
    if (sealed.length < TAG_SIZE) return null;
    try {
      return new Uint8Array(await subtle.decrypt({ name: "AES-GCM", iv: bytes(nonce) }, key, bytes(sealed)));
    } catch (error) {
      // WebCrypto reports a failed tag as an OperationError; anything else is a real fault.
      if (error instanceof Error && error.name === "OperationError") return null;
      throw error;
    }
  };
  const seal = async (nonce: Uint8Array, plaintext: Uint8Array): Promise<Uint8Array> =>
    new Uint8Array(await subtle.encrypt({ name: "AES-GCM", iv: bytes(nonce) }, key, bytes(plaintext)));
  return {
    seal,
    async sealParts(nonce, plaintext) {
      return [await seal(nonce, plaintext)];
    },
    open,
    // WebCrypto takes one buffer: the parts are joined (the one copy WebCrypto's hand-off makes anyway).
    async openParts(nonce, sealed) {
      const plaintext = await open(nonce, sealed.length === 1 ? (sealed[0] as Uint8Array) : joined(sealed));
      return plaintext === null ? null : [plaintext];
    },
  };
};

function joined(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
