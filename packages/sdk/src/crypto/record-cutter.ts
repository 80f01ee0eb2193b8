/**
 * Cuts a byte stream into fixed-size records whatever the incoming chunk boundaries, copying each
 * byte once into the record it belongs to (no concatenation). A full record is handed on only
 * once a further byte shows it is not the last one; whatever is held when the stream ends is the
 * last record: the writer flags it. Each record handed on is the receiver's to keep. (The reader
 * needs no copy: RecordSplitter hands it records as views of the chunks.)
 */
export class RecordCutter {
  private buffer: Uint8Array;
  private filled = 0;

  constructor(
    private readonly recordSize: number,
    private readonly onRecord: (record: Uint8Array) => Promise<void>,
  ) {
    this.buffer = new Uint8Array(recordSize);
  }

  async push(chunk: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.filled === this.recordSize) {
        const record = this.buffer;
        this.buffer = new Uint8Array(this.recordSize);
        this.filled = 0;
        await this.onRecord(record);
      }
      const take = Math.min(this.recordSize - this.filled, chunk.length - offset);
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
