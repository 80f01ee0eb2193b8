/** PNG text chunks (tEXt, zTXt, iTXt) read from the stream, chunk by chunk, without holding image data. */

import { FieldReader, uint32be } from "./fields.js";
import type { Findings } from "./findings.js";
import { inflateBounded, MetadataText } from "./metadata.js";
import { rules } from "./rules.js";

const SIGNATURE_BYTES = 8;
const CHUNK_HEADER_BYTES = 8;
const CRC_BYTES = 4;

const latin1 = (bytes: Uint8Array) => Buffer.from(bytes).toString("latin1");
const utf8 = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

/** Splits at the first NUL: [before, after] (after is empty when there is none). */
function splitNul(bytes: Uint8Array): [Uint8Array, Uint8Array] {
  const nul = bytes.indexOf(0);
  return nul < 0 ? [bytes, new Uint8Array(0)] : [bytes.subarray(0, nul), bytes.subarray(nul + 1)];
}

/** The keyword and text of a text chunk, and the text's full size (inflated when compressed). */
function readTextChunk(type: string, data: Uint8Array, length: number): { text: string; size: number } {
  const [keyword, rest] = splitNul(data);
  if (type === "zTXt") {
    const text = inflateBounded(rest.subarray(1));
    return { text: `${latin1(keyword)} ${latin1(text)}`, size: keyword.length + text.length };
  }
  if (type === "iTXt") {
    const compressed = rest[0] === 1;
    const [language, afterLanguage] = splitNul(rest.subarray(2));
    const [translated, body] = splitNul(afterLanguage);
    const text = compressed ? inflateBounded(body) : body;
    const header = length - body.length;
    return {
      text: `${latin1(keyword)} ${latin1(language)} ${utf8(translated)} ${utf8(text)}`,
      size: compressed ? header + text.length : length,
    };
  }
  return { text: `${latin1(keyword)} ${latin1(rest)}`, size: length };
}

export class PngScanner {
  private readonly reader = new FieldReader();
  private readonly metadata: MetadataText;

  constructor(findings: Findings) {
    this.metadata = new MetadataText(findings, "PNG");
    this.reader.expect(SIGNATURE_BYTES, 0, () => this.nextChunk());
  }

  feed(chunk: Uint8Array): void {
    this.reader.feed(chunk);
  }

  private nextChunk(): void {
    this.reader.expect(CHUNK_HEADER_BYTES, CHUNK_HEADER_BYTES, (header) => {
      const length = uint32be(header, 0);
      const type = latin1(header.subarray(4, 8));
      if (type === "IEND") return this.reader.stop();
      if (!rules.pngTextChunks.includes(type)) {
        return this.reader.expect(length + CRC_BYTES, 0, () => this.nextChunk());
      }
      this.reader.expect(length, rules.limits.image_metadata_scan_bytes, (data) => {
        const { text, size } = readTextChunk(type, data, length);
        this.metadata.add(`${type} chunk`, text, size);
        this.reader.expect(CRC_BYTES, 0, () => this.nextChunk());
      });
    });
  }
}
