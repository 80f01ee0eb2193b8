/**
 * A stream read as consecutive fields of known length, for formats made of length-prefixed parts (PNG chunks,
 * JPEG segments). Each field is either skipped or kept up to a bound, so state stays small at any file size.
 */
type FieldHandler = (kept: Uint8Array, length: number) => void;

export class FieldReader {
  private remaining = 0;
  private length = 0;
  private kept = new Uint8Array(0);
  private keptLength = 0;
  private handler: FieldHandler | null = null;

  /** Reads `length` bytes next, keeping the first `keep` of them, then calls `handler`. */
  expect(length: number, keep: number, handler: FieldHandler): void {
    this.remaining = length;
    this.length = length;
    this.kept = new Uint8Array(Math.min(keep, length));
    this.keptLength = 0;
    this.handler = handler;
  }

  /** Reads nothing more: the rest of the stream is ignored. */
  stop(): void {
    this.handler = null;
  }

  get stopped(): boolean {
    return this.handler === null;
  }

  feed(chunk: Uint8Array): void {
    let at = 0;
    while (this.handler !== null) {
      const room = this.kept.length - this.keptLength;
      const take = Math.min(this.remaining, chunk.length - at);
      if (room > 0) {
        const kept = Math.min(room, take);
        this.kept.set(chunk.subarray(at, at + kept), this.keptLength);
        this.keptLength += kept;
      }
      at += take;
      this.remaining -= take;
      if (this.remaining > 0) return;
      const handler = this.handler;
      this.handler = null;
      handler(this.kept, this.length);
    }
  }
}

export function uint32be(bytes: Uint8Array, at: number): number {
  return (
    (((bytes[at] ?? 0) << 24) >>> 0) +
    ((bytes[at + 1] ?? 0) << 16) +
    ((bytes[at + 2] ?? 0) << 8) +
    (bytes[at + 3] ?? 0)
  );
}

export function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  return bytes.length >= prefix.length && prefix.every((b, i) => bytes[i] === b);
}
