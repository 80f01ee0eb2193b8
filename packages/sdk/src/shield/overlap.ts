/**
 * Seams between chunks of a stream: the last `keep` bytes of what came before, followed by the first `keep`
 * bytes of the new chunk. Searching each chunk and then its seam finds every token of up to `keep` bytes,
 * wherever the boundaries fall, without copying chunks. Memory is two small buffers.
 */
export class Overlap {
  private carry: Buffer = Buffer.alloc(0);

  constructor(private readonly keep: number) {}

  /** The carried bytes and the head of `chunk`; the carry moves on to the end of `chunk`. */
  seam(chunk: Uint8Array): Buffer {
    const bytes = asBuffer(chunk);
    const seam = Buffer.concat([this.carry, bytes.subarray(0, this.keep)]);
    const after = bytes.length > this.keep ? bytes : seam;
    this.carry = Buffer.from(after.subarray(Math.max(0, after.length - this.keep)));
    return seam;
  }

  /** What is carried when the stream ends (its final bytes, not yet seen with a byte after them). */
  rest(): Buffer {
    return this.carry;
  }
}

export function asBuffer(chunk: Uint8Array): Buffer {
  return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}
