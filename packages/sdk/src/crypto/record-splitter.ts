/**
 * Splits a byte stream into records of a fixed size as lists of views of the incoming chunks:
 * nothing is copied, whatever the chunk boundaries (a 65,552-byte record usually spans two network
 * chunks). A full record is handed on only once a further byte shows it is not the last one; what
 * is held when the stream ends is the last record. Chunks must stay unchanged once pushed, as web
 * stream chunks and Node's network buffers do: the reader owns them.
 */
export class RecordSplitter {
  private parts: Uint8Array[] = [];
  private filled = 0;

  constructor(
    private readonly recordSize: number,
    /** Answers a promise only when it has work left to wait for. */
    private readonly onRecord: (parts: Uint8Array[]) => Promise<void> | undefined,
  ) {}

  async push(chunk: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.filled === this.recordSize) {
        const record = this.parts;
        this.parts = [];
        this.filled = 0;
        const pending = this.onRecord(record);
        if (pending) await pending;
      }
      const take = Math.min(this.recordSize - this.filled, chunk.length - offset);
      this.parts.push(take === chunk.length ? chunk : chunk.subarray(offset, offset + take));
      this.filled += take;
      offset += take;
    }
  }

  /** The parts held when the stream ends: the last record (none only if nothing was pushed). */
  rest(): { parts: Uint8Array[]; length: number } {
    return { parts: this.parts, length: this.filled };
  }
}
