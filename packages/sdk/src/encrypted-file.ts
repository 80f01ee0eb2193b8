import { type AesKey, TAG_SIZE } from "./crypto/aes-gcm.js";
import {
  encodeHeader,
  fileKey,
  HEADER_SIZE,
  RECORD_SIZE,
  recordCount,
  recordNonce,
} from "./crypto/record-format.js";
import { nodeAesGcm } from "./node-aes-gcm.js";
import { FILE_CHUNK_BYTES, readFileChunks, skipBytes } from "./streams.js";

/**
 * The encrypted file from wire byte `offset` on (a resumed upload, decisions 7.2): sealed again
 * from the record holding that offset, its bytes before the offset left out.
 */
export function encryptedFileBatchesFrom(
  path: string,
  size: number,
  contentKey: Uint8Array,
  salt: Uint8Array,
  onBytes: (bytes: number) => void,
  offset: number,
): AsyncGenerator<readonly Uint8Array[]> {
  const record = Math.max(0, Math.floor((offset - HEADER_SIZE) / (RECORD_SIZE + TAG_SIZE)));
  // Record 0's batches start with the header, later ones at their own record.
  const startsAt = record === 0 ? 0 : HEADER_SIZE + record * (RECORD_SIZE + TAG_SIZE);
  const batches = encryptedFileBatches(path, size, contentKey, salt, onBytes, record);
  return offset === startsAt ? batches : skipBytes(batches, offset - startsAt);
}

/**
 * A file encrypted as decisions 5.3 as it is read, for the Node SDK's uploads: the same bytes as
 * the crypto core's createEncryptStream, with less work per byte. Each read is a whole number of
 * records (FILE_CHUNK_BYTES), so records are sealed from views of it, never cut or copied into
 * buffers of their own; the declared size says which record is the last, so a read is sealed as
 * soon as it arrives and its buffer is free again (two buffers serve the whole file); and each
 * read goes out as one batch of ciphertexts and tags, unjoined. Fewer bytes allocated means fewer
 * garbage collections and less memory handed back to the system and faulted in again. A file
 * whose size changes fails with FILE_CHANGED (readFileChunks).
 *
 * From record `firstRecord` on (a resumed upload), the header only with record 0: the same key,
 * salt and record index give the same record (5.3), so the bytes match those sent before.
 */
export async function* encryptedFileBatches(
  path: string,
  size: number,
  contentKey: Uint8Array,
  salt: Uint8Array,
  onBytes: (bytes: number) => void,
  firstRecord = 0,
): AsyncGenerator<readonly Uint8Array[]> {
  const key = await fileKey(nodeAesGcm, contentKey, salt);
  const records = recordCount(size);
  const header = encodeHeader(RECORD_SIZE, salt);
  if (size === 0) {
    yield [header, ...(await sealRecords(key, new Uint8Array(0), 0, records))];
    return;
  }
  // The next read fills one buffer while this one is sealed (readFileChunks reads one ahead).
  const buffers = [Buffer.allocUnsafeSlow(FILE_CHUNK_BYTES), Buffer.allocUnsafeSlow(FILE_CHUNK_BYTES)];
  let turn = 0;
  const nextBuffer = (length: number) => (buffers[turn++ % 2] as Buffer).subarray(0, length);
  let index = firstRecord;
  for await (const chunk of readFileChunks(path, size, onBytes, nextBuffer, firstRecord * RECORD_SIZE)) {
    const sealed = await sealRecords(key, chunk, index, records);
    yield index === 0 ? [header, ...sealed] : sealed;
    index += Math.ceil(chunk.length / RECORD_SIZE);
  }
}

/**
 * The records of one read, from record `first` on, as ciphertext, tag, ciphertext, tag…; an empty
 * read is the one empty record of an empty file. Nothing answered is a view of `chunk`.
 */
async function sealRecords(
  key: AesKey,
  chunk: Uint8Array,
  first: number,
  records: number,
): Promise<Uint8Array[]> {
  const parts: Uint8Array[] = [];
  let index = first;
  do {
    const offset = (index - first) * RECORD_SIZE;
    const nonce = recordNonce(index, index === records - 1);
    parts.push(...(await key.sealParts(nonce, chunk.subarray(offset, offset + RECORD_SIZE))));
    index++;
  } while ((index - first) * RECORD_SIZE < chunk.length);
  return parts;
}
