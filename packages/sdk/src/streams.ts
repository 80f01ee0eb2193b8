import { createReadStream } from "node:fs";
import { Readable } from "node:stream";
import { HandoffError } from "./errors.js";

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
function fileStream(path: string): ReadableStream<Uint8Array> {
  return Readable.toWeb(createReadStream(path)) as ReadableStream<Uint8Array>;
}

/**
 * A file's bytes as they are sent, checked against the size it had when the upload was declared
 * (a file that grows or shrinks meanwhile would not match its Content-Length or signed size),
 * telling `onBytes` the running total after each chunk.
 */
export function sizedFileStream(
  path: string,
  size: number,
  onBytes: (bytes: number) => void,
): ReadableStream<Uint8Array> {
  let bytes = 0;
  const changed = () =>
    new HandoffError(
      "FILE_CHANGED",
      `${path} changed size while it was being sent (${size} bytes when it started)`,
    );
  return fileStream(path).pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        bytes += chunk.byteLength;
        if (bytes > size) throw changed();
        onBytes(bytes);
        controller.enqueue(chunk);
      },
      flush() {
        if (bytes !== size) throw changed();
      },
    }),
  );
}
