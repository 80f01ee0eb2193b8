import { createReadStream } from "node:fs";
import { Readable } from "node:stream";

/** A pull-driven web stream over an async iterable: the next chunk is made only when asked for. */
export function streamOf(parts: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const iterator = parts[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next = await iterator.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      async cancel(reason) {
        await iterator.return?.(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/** A file's bytes as a web stream, read as the consumer pulls. */
export function fileStream(path: string): ReadableStream<Uint8Array> {
  return Readable.toWeb(createReadStream(path)) as ReadableStream<Uint8Array>;
}

/** Passes chunks on unchanged, telling `onBytes` the running total after each. */
export function countingStream(onBytes: (bytes: number) => void): TransformStream<Uint8Array, Uint8Array> {
  let bytes = 0;
  return new TransformStream({
    transform(chunk, controller) {
      bytes += chunk.byteLength;
      onBytes(bytes);
      controller.enqueue(chunk);
    },
  });
}
