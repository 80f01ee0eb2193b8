import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";

/**
 * Streaming encryption at rest: AES-256-GCM over fixed-size records, each with its own nonce
 * (a random prefix plus the record number) and a flag in its associated data marking the last
 * record, so a reordered, altered or cut-off stream fails to decrypt. Memory stays at about two
 * records whatever the file size.
 *
 * Layout: "HOF1" | record size (uint32 BE) | nonce prefix (8 bytes) | records, each
 * ciphertext || 16-byte tag; the last record, possibly empty, is flagged final.
 */
const MAGIC = Buffer.from("HOF1");
const HEADER_BYTES = 16;
const TAG_BYTES = 16;
export const DEFAULT_RECORD_BYTES = 64 * 1024;

function nonce(prefix: Buffer, counter: number): Buffer {
  const value = Buffer.alloc(12);
  prefix.copy(value, 0);
  value.writeUInt32BE(counter, 8);
  return value;
}

const flag = (final: boolean) => Buffer.from([final ? 1 : 0]);

export class EncryptRecords extends Transform {
  private pending = Buffer.alloc(0);
  private counter = 0;
  private readonly prefix = randomBytes(8);

  constructor(
    private readonly key: Buffer,
    private readonly recordBytes = DEFAULT_RECORD_BYTES,
  ) {
    super();
    const header = Buffer.alloc(HEADER_BYTES);
    MAGIC.copy(header, 0);
    header.writeUInt32BE(recordBytes, 4);
    this.prefix.copy(header, 8);
    this.push(header);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.pending = Buffer.concat([this.pending, chunk]);
    // Keep at least one byte back: only the flush knows which record is the last.
    while (this.pending.length > this.recordBytes) {
      this.push(this.seal(this.pending.subarray(0, this.recordBytes), false));
      this.pending = this.pending.subarray(this.recordBytes);
    }
    done();
  }

  override _flush(done: TransformCallback): void {
    this.push(this.seal(this.pending, true));
    done();
  }

  private seal(plaintext: Buffer, final: boolean): Buffer {
    const cipher = createCipheriv("aes-256-gcm", this.key, nonce(this.prefix, this.counter++));
    cipher.setAAD(flag(final));
    return Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  }
}

export class DecryptRecords extends Transform {
  private pending = Buffer.alloc(0);
  private counter = 0;
  private prefix: Buffer | null = null;
  private recordBytes = 0;

  constructor(private readonly key: Buffer) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      this.pending = Buffer.concat([this.pending, chunk]);
      if (!this.prefix) {
        if (this.pending.length < HEADER_BYTES) {
          done();
          return;
        }
        if (!this.pending.subarray(0, 4).equals(MAGIC)) throw new Error("not an encrypted blob");
        this.recordBytes = this.pending.readUInt32BE(4);
        this.prefix = Buffer.from(this.pending.subarray(8, HEADER_BYTES));
        this.pending = this.pending.subarray(HEADER_BYTES);
      }
      const sealed = this.recordBytes + TAG_BYTES;
      // A full record followed by more bytes cannot be the last one.
      while (this.pending.length > sealed) {
        this.push(this.open(this.pending.subarray(0, sealed), false));
        this.pending = this.pending.subarray(sealed);
      }
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  override _flush(done: TransformCallback): void {
    try {
      if (!this.prefix || this.pending.length < TAG_BYTES) throw new Error("encrypted blob is cut short");
      this.push(this.open(this.pending, true));
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  private open(record: Buffer, final: boolean): Buffer {
    const decipher = createDecipheriv("aes-256-gcm", this.key, nonce(this.prefix as Buffer, this.counter++));
    decipher.setAAD(flag(final));
    decipher.setAuthTag(record.subarray(record.length - TAG_BYTES));
    return Buffer.concat([decipher.update(record.subarray(0, record.length - TAG_BYTES)), decipher.final()]);
  }
}
