import { type AesGcm, type AesKey, webAesGcm } from "./aes-gcm.js";
import { toBase64 } from "./base64.js";
import { HandoffCryptoError } from "./errors.js";
import { randomBytes, requireKey } from "./keys.js";
import { jobDepth, OrderedJobs } from "./ordered-jobs.js";
import { RecordCutter } from "./record-cutter.js";
import {
  encodeHeader,
  fileKey,
  RECORD_SIZE,
  recordNonce,
  requireRecordSize,
  SALT_SIZE,
} from "./record-format.js";

/**
 * Encrypts one file as the records of decisions 5.3. Its `encryptionIv` (base64 of the salt) is
 * known before the first byte, so the transfer can be signed before anything is uploaded.
 * `fixed` pins the salt or record size: for test vectors, and for a retried upload, which must
 * send the same ciphertext as the first attempt (the SDK signs the salt once, then retries).
 * `firstRecord` starts at that record (a resumed upload, decisions 7.2): the input is the
 * plaintext from that record's first byte, and the output its records only, the header with
 * record 0 alone; with the same key and salt they are the bytes sent the first time.
 * `aes` picks the AES-GCM implementation (WebCrypto unless given; the bytes are the same).
 */
export function createEncryptStream(
  contentKey: Uint8Array,
  fixed?: { salt?: Uint8Array; recordSize?: number; firstRecord?: number },
  aes: AesGcm = webAesGcm,
): { encryptionIv: string; stream: TransformStream<Uint8Array, Uint8Array> } {
  requireKey(contentKey, "content key");
  const salt = fixed?.salt ?? randomBytes(SALT_SIZE);
  if (salt.length !== SALT_SIZE)
    throw new HandoffCryptoError("BAD_ENCODING", `salt must be ${SALT_SIZE} bytes`);
  const recordSize = requireRecordSize(fixed?.recordSize ?? RECORD_SIZE);
  let key: AesKey;
  const firstRecord = fixed?.firstRecord ?? 0;
  if (!Number.isSafeInteger(firstRecord) || firstRecord < 0)
    throw new HandoffCryptoError("BAD_ENCODING", "firstRecord must be a record index");
  let index = firstRecord;
  let sealed: OrderedJobs<Uint8Array>;
  let cutter: RecordCutter;
  const seal = (plaintext: Uint8Array, last: boolean) =>
    sealed.add(key.seal(recordNonce(index++, last), plaintext));

  const stream = new TransformStream<Uint8Array, Uint8Array>({
    async start(controller) {
      key = await fileKey(aes, contentKey, salt);
      sealed = new OrderedJobs(jobDepth(recordSize), (record) => controller.enqueue(record));
      cutter = new RecordCutter(recordSize, (record) => seal(record, false));
      if (firstRecord === 0) controller.enqueue(encodeHeader(recordSize, salt));
    },
    transform: (chunk) => cutter.push(chunk),
    async flush() {
      await seal(cutter.rest(), true);
      await sealed.drain();
    },
  });
  return { encryptionIv: toBase64(salt), stream };
}
