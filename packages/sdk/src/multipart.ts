import { randomBytes } from "node:crypto";
import type { BodyBatches } from "./streaming-request.js";

/** One file part: its bytes are opened only when the body reaches it, and again on a retry. */
export interface MultipartFile {
  name: string;
  type: string;
  /** The exact number of bytes `open()` yields: the part's length, for Content-Length. */
  size: number;
  open(): BodyBatches;
}

export interface MultipartBody {
  contentType: string;
  /** Content-Length of the whole body, known before the first byte. */
  length: number;
  /** The body from its first byte; each call starts afresh (retries). */
  batches(): BodyBatches;
}

const encoder = new TextEncoder();

/**
 * A filename parameter the server's parser reads back exactly: plain ASCII as a quoted string,
 * anything else in RFC 5987 form (`filename*=UTF-8''…`), which multipart parsers decode as UTF-8.
 */
function filenameParameter(name: string): string {
  if (/^[\x20-\x7e]*$/.test(name) && !/["\\]/.test(name)) return `filename="${name}"`;
  const encoded = encodeURIComponent(name).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `filename*=UTF-8''${encoded}`;
}

/**
 * multipart/form-data as a stream: the text fields first (the server decides on them before the
 * first file arrives), then one `files` part per file. Never holds a file in memory.
 */
export function multipartBody(fields: [string, string][], files: MultipartFile[]): MultipartBody {
  const boundary = `----handoff-${randomBytes(12).toString("hex")}`;
  const fieldBytes = fields.map(([name, value]) =>
    encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
  );
  const fileHeads = files.map((file) =>
    encoder.encode(
      `--${boundary}\r\nContent-Disposition: form-data; name="files"; ${filenameParameter(file.name)}\r\n` +
        `Content-Type: ${file.type}\r\n\r\n`,
    ),
  );
  const lineBreak = encoder.encode("\r\n");
  const closing = encoder.encode(`--${boundary}--\r\n`);
  const length =
    fieldBytes.reduce((sum, part) => sum + part.byteLength, 0) +
    files.reduce((sum, file, index) => sum + (fileHeads[index]?.byteLength ?? 0) + file.size + 2, 0) +
    closing.byteLength;

  async function* batches(): AsyncGenerator<readonly Uint8Array[]> {
    yield fieldBytes;
    for (const [index, file] of files.entries()) {
      yield [fileHeads[index] as Uint8Array];
      yield* file.open();
      yield [lineBreak];
    }
    yield [closing];
  }

  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    length,
    batches,
  };
}
