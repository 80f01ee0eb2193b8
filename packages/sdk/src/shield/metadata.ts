/**
 * Image metadata text (PNG text chunks, JPEG comments, EXIF and XMP): its override phrases and its total size.
 * Parsers hand over each piece whole but bounded: at most `image_metadata_scan_bytes` of it is kept.
 */
import { Unzlib } from "fflate";
import { type Findings, formatBytes, quote } from "./findings.js";
import { rules } from "./rules.js";

const scanBytes = rules.limits.image_metadata_scan_bytes;

/**
 * Inflates zlib data to at most `scanBytes` bytes. The input goes in small slices so that no single step can
 * expand past the bound by more than one slice's worth (deflate expands at most ~1032:1): a bomb costs nothing.
 */
export function inflateBounded(compressed: Uint8Array): Uint8Array {
  const out = new Uint8Array(scanBytes);
  let length = 0;
  const inflater = new Unzlib((data) => {
    const room = scanBytes - length;
    out.set(room < data.length ? data.subarray(0, room) : data, length);
    length += Math.min(room, data.length);
  });
  try {
    for (let at = 0; at < compressed.length && length < scanBytes; at += 64) {
      inflater.push(compressed.subarray(at, at + 64), false);
    }
  } catch {
    // Corrupt data: what inflated before the fault is still metadata text.
  }
  return out.subarray(0, length);
}

export class MetadataText {
  private total = 0;

  constructor(
    private readonly findings: Findings,
    private readonly image: string,
  ) {}

  /** A piece of metadata text, `size` bytes in full (the text itself may be cut at the scan bound). */
  add(where: string, text: string, size: number): void {
    this.total += size;
    if (!this.findings.has("suspicious_metadata")) {
      const match = rules.override.exec(text);
      if (match !== null) {
        this.findings.add(
          "suspicious_metadata",
          `The ${this.image} ${where} contains the override phrase ${quote(match[0])}.`,
        );
      }
    }
    const limit = rules.limits.image_metadata_text_bytes;
    if (this.total > limit && !this.findings.has("large_metadata")) {
      this.findings.add(
        "large_metadata",
        `The ${this.image} holds more than ${formatBytes(limit)} of metadata text.`,
      );
    }
  }
}
