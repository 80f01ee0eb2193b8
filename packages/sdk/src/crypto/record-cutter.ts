/**
 * Cuts a byte stream into fixed-size records whatever the incoming chunk boundaries, in one
 * reused buffer (no concatenation). A full record is handed on only once a further byte shows
 * it is not the last one; whatever is held when the stream ends is the last record. Both
 * directions need exactly that: the writer flags the last record, the reader must know which
 * record should carry the flag.
 */
export class RecordCutter {
  private readonly buffer: Uint8Array;
  private filled = 0;

  /** `onRecord` must be done with the bytes it is given when its promise settles: the buffer is reused. */
  constructor(
    recordSize: number,
    private readonly onRecord: (record: Uint8Array) => Promise<void>,
  ) {
    this.buffer = new Uint8Array(recordSize);
  }

  async push(chunk: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.filled === this.buffer.length) {
        await this.onRecord(this.buffer);
        this.filled = 0;
      }
      const take = Math.min(this.buffer.length - this.filled, chunk.length - offset);
      this.buffer.set(chunk.subarray(offset, offset + take), this.filled);
      this.filled += take;
      offset += take;
    }
  }

  /** The bytes held when the stream ends: the last record (empty only if nothing was pushed). */
  rest(): Uint8Array {
    return this.buffer.subarray(0, this.filled);
  }
}
