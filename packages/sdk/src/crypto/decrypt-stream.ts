import { type AesGcm, type AesKey, TAG_SIZE, webAesGcm } from "./aes-gcm.js";
import { fromBase64 } from "./base64.js";
import { HandoffCryptoError } from "./errors.js";
import { requireKey } from "./keys.js";
import { jobDepth, OrderedJobs } from "./ordered-jobs.js";
import { RecordCutter } from "./record-cutter.js";
import {
  badMagic,
  fileKey,
  HEADER_SIZE,
  hasMagic,
  parseHeader,
  recordNonce,
  SALT_SIZE,
} from "./record-format.js";

type Controller = TransformStreamDefaultController<Uint8Array>;

/**
 * Decrypts one file written as decisions 5.3, refusing everything 5.3 lists with a
 * HandoffCryptoError that errors the stream. A record's plaintext is emitted only once its tag
 * has verified; callers still write to a temporary file and keep it only if the stream ends
 * cleanly, because a refusal can come after earlier records were emitted. `aes` picks the AES-GCM
 * implementation (WebCrypto unless given).
 */
export function createDecryptStream(
  contentKey: Uint8Array,
  encryptionIv: string,
  aes: AesGcm = webAesGcm,
): TransformStream<Uint8Array, Uint8Array> {
  // The file key is derived once the header arrives; a caller may wipe its copy of K before that.
  const keyBytes = requireKey(contentKey, "content key").slice();
  const salt = fromBase64(encryptionIv);
  if (salt.length !== SALT_SIZE) {
    throw new HandoffCryptoError("BAD_ENCODING", `encryption_iv must be base64 of ${SALT_SIZE} bytes`);
  }
  const header = new Uint8Array(HEADER_SIZE);
  let headerFilled = 0;
  let opener: RecordOpener | undefined;

  return new TransformStream<Uint8Array, Uint8Array>({
    async transform(chunk, controller) {
      let body = chunk;
      if (!opener) {
        const take = Math.min(HEADER_SIZE - headerFilled, chunk.length);
        header.set(chunk.subarray(0, take), headerFilled);
        headerFilled += take;
        body = chunk.subarray(take);
        if (headerFilled < HEADER_SIZE) {
          if (!hasMagic(header.subarray(0, headerFilled))) throw badMagic();
          return;
        }
        const recordSize = parseHeader(header, salt);
        opener = new RecordOpener(await fileKey(aes, keyBytes, salt), recordSize, controller);
      }
      await opener.push(body);
    },
    async flush() {
      if (opener) return opener.finish();
      throw hasMagic(header.subarray(0, headerFilled)) ? truncated("inside the header") : badMagic();
    },
  });
}

/** Opens records in order; which one must carry the last flag is known only when the stream ends. */
class RecordOpener {
  private index = 0;
  private readonly opened: OrderedJobs<Uint8Array>;
  private readonly cutter: RecordCutter;

  constructor(
    private readonly key: AesKey,
    private readonly recordSize: number,
    controller: Controller,
  ) {
    this.opened = new OrderedJobs(jobDepth(recordSize), (plaintext) => {
      if (plaintext.length > 0) controller.enqueue(plaintext);
    });
    this.cutter = new RecordCutter(recordSize + TAG_SIZE, (sealed) =>
      this.opened.add(this.openInner(sealed, this.index++)),
    );
  }

  push(chunk: Uint8Array): Promise<void> {
    return this.cutter.push(chunk);
  }

  async finish(): Promise<void> {
    await this.opened.add(this.openLast(this.cutter.rest(), this.index++));
    await this.opened.drain();
  }

  /** A full record with more bytes after it: it must open as an inner record. */
  private async openInner(sealed: Uint8Array, index: number): Promise<Uint8Array> {
    const plaintext = await this.open(sealed, index, false);
    if (plaintext) return plaintext;
    if (await this.open(sealed, index, true)) {
      throw new HandoffCryptoError("TRAILING_DATA", `bytes follow the last record (record ${index})`);
    }
    throw badTag(index);
  }

  /** The bytes held when the stream ended: they must open as the record flagged last. */
  private async openLast(sealed: Uint8Array, index: number): Promise<Uint8Array> {
    if (sealed.length < TAG_SIZE) throw truncated("before a record flagged last");
    const plaintext = await this.open(sealed, index, true);
    if (plaintext) return plaintext;
    // A full record that opens as an inner one: the stream was cut at a record boundary.
    const cutAtBoundary =
      sealed.length === this.recordSize + TAG_SIZE && (await this.open(sealed, index, false));
    throw cutAtBoundary ? truncated("before a record flagged last") : badTag(index);
  }

  private open(sealed: Uint8Array, index: number, last: boolean): Promise<Uint8Array | null> {
    return this.key.open(recordNonce(index, last), sealed);
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
