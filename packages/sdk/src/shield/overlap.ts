/**
 * Byte windows over a stream: each chunk is seen behind the last `keep` bytes of what came before, so a
 * token cut by a chunk boundary is whole in the next window. Memory is the chunk plus `keep` bytes.
 */
export class Overlap {
  private carry: Buffer = Buffer.alloc(0);

  constructor(private readonly keep: number) {}

  /** The carried bytes followed by `chunk`; the next window carries this one's last `keep` bytes. */
  window(chunk: Uint8Array): Buffer {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const window = this.carry.length === 0 ? bytes : Buffer.concat([this.carry, bytes]);
    this.carry = Buffer.from(window.subarray(Math.max(0, window.length - this.keep)));
    return window;
  }

  /** What is carried when the stream ends (its final bytes, not yet seen with a byte after them). */
  rest(): Buffer {
    return this.carry;
  }
}
