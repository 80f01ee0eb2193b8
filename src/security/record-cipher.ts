import { createDecipheriv } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";

/**
 * The reader of the legacy at-rest format (HOF1), in which transfers held for a person were
 * encrypted before the server wrote decisions 5.3's format: AES-256-GCM over fixed-size records,
 * each with its own nonce (a random prefix plus the record number) and a flag in its associated
 * data marking the last record. Activation reads such files once to rewrite them in the new format
 * (src/command-handlers/transfers/activate.ts); nothing writes HOF1 any more (the writer is kept for tests
 * in test/support/legacy-at-rest.ts).
 *
 * Layout: "HOF1" | record size (uint32 BE) | nonce prefix (8 bytes) | records, each
 * ciphertext || 16-byte tag; the last record, possibly empty, is flagged final.
 */
export const MAGIC = Buffer.from("HOF1");
export const HEADER_BYTES = 16;
const TAG_BYTES = 16;

export function nonce(prefix: Buffer, counter: number): Buffer {
  const value = Buffer.alloc(12);
  prefix.copy(value, 0);
  value.writeUInt32BE(counter, 8);
  return value;
}

export const flag = (final: boolean) => Buffer.from([final ? 1 : 0]);

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
