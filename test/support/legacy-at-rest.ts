import { createCipheriv, randomBytes } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";
import { flag, HEADER_BYTES, MAGIC, nonce } from "../../src/security/record-cipher.js";

/**
 * The legacy at-rest writer (HOF1): what the server wrote for transfers held for a person before
 * it used decisions 5.3's format. Only tests write it now, to make the data an older version left.
 */
export const DEFAULT_RECORD_BYTES = 64 * 1024;

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
