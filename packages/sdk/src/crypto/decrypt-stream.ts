import { type AesGcm, type AesKey, TAG_SIZE, webAesGcm } from "./aes-gcm.js";
import { fromBase64 } from "./base64.js";
import { HandoffCryptoError } from "./errors.js";
import { requireKey } from "./keys.js";
import { jobDepth, OrderedJobs } from "./ordered-jobs.js";
import {
  badMagic,
  fileKey,
  HEADER_SIZE,
  hasMagic,
  parseHeader,
  recordNonce,
  SALT_SIZE,
} from "./record-format.js";
import { RecordSplitter } from "./record-splitter.js";

/**
 * Decrypts one file written as decisions 5.3, chunk by chunk as it arrives, refusing everything
 * 5.3 lists with a HandoffCryptoError (from `push` or `end`). A record's plaintext is handed to
 * `onPlaintext` only once its tag has verified; callers still write to a temporary file and keep
 * it only if `end` succeeds, because a refusal can come after earlier records were handed on.
 * Pushed chunks must stay unchanged (see RecordSplitter); each plaintext part is the callee's.
 * `aes` picks the AES-GCM implementation (WebCrypto unless given).
 */
export class RecordDecryptor {
  private readonly keyBytes: Uint8Array;
  private readonly salt: Uint8Array;
  private readonly header = new Uint8Array(HEADER_SIZE);
  private headerFilled = 0;
  private opener: RecordOpener | undefined;

  constructor(
    contentKey: Uint8Array,
    encryptionIv: string,
    private readonly onPlaintext: (part: Uint8Array) => void,
    private readonly aes: AesGcm = webAesGcm,
  ) {
    // The file key is derived once the header arrives; a caller may wipe its copy of K before that.
    this.keyBytes = requireKey(contentKey, "content key").slice();
    this.salt = fromBase64(encryptionIv);
    if (this.salt.length !== SALT_SIZE) {
      throw new HandoffCryptoError("BAD_ENCODING", `encryption_iv must be base64 of ${SALT_SIZE} bytes`);
    }
  }

  async push(chunk: Uint8Array): Promise<void> {
    if (this.opener) return this.opener.push(chunk);
    const take = Math.min(HEADER_SIZE - this.headerFilled, chunk.length);
    this.header.set(chunk.subarray(0, take), this.headerFilled);
    this.headerFilled += take;
    if (this.headerFilled < HEADER_SIZE) {
      if (!hasMagic(this.header.subarray(0, this.headerFilled))) throw badMagic();
      return;
    }
    const recordSize = parseHeader(this.header, this.salt);
    const key = await fileKey(this.aes, this.keyBytes, this.salt);
    this.opener = new RecordOpener(key, recordSize, this.onPlaintext);
    await this.opener.push(chunk.subarray(take));
  }

  /** After the last chunk: opens the last record, or refuses a file that ended too early. */
  async end(): Promise<void> {
    if (this.opener) return this.opener.finish();
    throw hasMagic(this.header.subarray(0, this.headerFilled)) ? truncated("inside the header") : badMagic();
  }
}

/** RecordDecryptor as a web TransformStream (for browsers, and wherever a pipe is wanted). */
export function createDecryptStream(
  contentKey: Uint8Array,
  encryptionIv: string,
  aes: AesGcm = webAesGcm,
): TransformStream<Uint8Array, Uint8Array> {
  let enqueue: (part: Uint8Array) => void = () => {};
  const decryptor = new RecordDecryptor(contentKey, encryptionIv, (part) => enqueue(part), aes);
  return new TransformStream<Uint8Array, Uint8Array>({
    start(controller) {
      enqueue = (part) => controller.enqueue(part);
    },
    transform: (chunk) => decryptor.push(chunk),
    flush: () => decryptor.end(),
  });
}

/** Opens records in order; which one must carry the last flag is known only when the stream ends. */
class RecordOpener {
  private index = 0;
  private readonly opened: OrderedJobs<Uint8Array[]>;
  private readonly splitter: RecordSplitter;

  constructor(
    private readonly key: AesKey,
    private readonly recordSize: number,
    onPlaintext: (part: Uint8Array) => void,
  ) {
    const handOn = (plaintext: Uint8Array[]) => {
      for (const part of plaintext) if (part.length > 0) onPlaintext(part);
    };
    this.opened = new OrderedJobs(jobDepth(recordSize), handOn);
    const openNow = key.openPartsNow?.bind(key);
    this.splitter = new RecordSplitter(recordSize + TAG_SIZE, (sealed) => {
      const index = this.index++;
      if (!openNow) return this.opened.add(this.openInner(sealed, index));
      // Opened in the call and handed on at once: no job and no promise per record (nothing else
      // is in the queue before the last record, so the order holds).
      const plaintext = openNow(recordNonce(index, false), sealed);
      if (!plaintext) return this.innerRefused(sealed, index);
      handOn(plaintext);
      return undefined;
    });
  }

  push(chunk: Uint8Array): Promise<void> {
    return this.splitter.push(chunk);
  }

  async finish(): Promise<void> {
    await this.opened.add(this.openLast(this.splitter.rest(), this.index++));
    await this.opened.drain();
  }

  /** A full record with more bytes after it: it must open as an inner record. */
  private async openInner(sealed: Uint8Array[], index: number): Promise<Uint8Array[]> {
    return (await this.open(sealed, index, false)) ?? this.innerRefused(sealed, index);
  }

  /** Why a full record with more bytes after it did not open as an inner record. */
  private async innerRefused(sealed: Uint8Array[], index: number): Promise<never> {
    if (await this.open(sealed, index, true)) {
      throw new HandoffCryptoError("TRAILING_DATA", `bytes follow the last record (record ${index})`);
    }
    throw badTag(index);
  }

  /** The bytes held when the stream ended: they must open as the record flagged last. */
  private async openLast(
    rest: { parts: Uint8Array[]; length: number },
    index: number,
  ): Promise<Uint8Array[]> {
    if (rest.length < TAG_SIZE) throw truncated("before a record flagged last");
    const plaintext = await this.open(rest.parts, index, true);
    if (plaintext) return plaintext;
    // A full record that opens as an inner one: the stream was cut at a record boundary.
    const cutAtBoundary =
      rest.length === this.recordSize + TAG_SIZE && (await this.open(rest.parts, index, false));
    throw cutAtBoundary ? truncated("before a record flagged last") : badTag(index);
  }

  private open(sealed: Uint8Array[], index: number, last: boolean): Promise<Uint8Array[] | null> {
    return this.key.openParts(recordNonce(index, last), sealed);
  }
}

function truncated(where: string): HandoffCryptoError {
  return new HandoffCryptoError("TRUNCATED", `the encrypted file ends ${where}`);
}

function badTag(index: number): HandoffCryptoError {
  return new HandoffCryptoError(
    "BAD_TAG",
    `record ${index} failed authentication: the file was altered, cut mid-record, or the key is wrong`,
  );
}
