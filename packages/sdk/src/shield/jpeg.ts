/**
 * JPEG comment (COM) and APP1 (EXIF, XMP) text read from the stream, segment by segment. Reading stops at the
 * start of scan: metadata segments come before the image data, and the entropy-coded data is not parsed.
 */

import { FieldReader, startsWith } from "./fields.js";
import type { Findings } from "./findings.js";
import { MetadataText } from "./metadata.js";
import { rules } from "./rules.js";

const MARKER_PREFIX = 0xff;
const START_OF_SCAN = 0xda;
const END_OF_IMAGE = 0xd9;
const EXIF_TYPE_ASCII = 2;
/** Markers with no length field: TEM, RST0–RST7, SOI. */
const standalone = (marker: number) => marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8);

/** The text fields of an EXIF block (a TIFF structure): ASCII entries, UserComment and the UTF-16 XP tags. */
function exifText(tiff: Uint8Array): string[] {
  if (tiff.length < 8) return [];
  const view = new DataView(tiff.buffer, tiff.byteOffset, tiff.byteLength);
  const little = tiff[0] === 0x49;
  const u16 = (at: number) => (at + 2 <= tiff.length ? view.getUint16(at, little) : 0);
  const u32 = (at: number) => (at + 4 <= tiff.length ? view.getUint32(at, little) : 0);
  const texts: string[] = [];
  const visited = new Set<number>();
  const readIfd = (offset: number) => {
    if (offset < 8 || offset + 2 > tiff.length || visited.has(offset)) return;
    visited.add(offset);
    const count = u16(offset);
    for (let i = 0; i < count; i++) {
      const entry = offset + 2 + i * 12;
      if (entry + 12 > tiff.length) return;
      const tag = u16(entry);
      const type = u16(entry + 2);
      const size = u32(entry + 4);
      if (tag === rules.exifIfdPointerTag) {
        readIfd(u32(entry + 8));
        continue;
      }
      const isText =
        type === EXIF_TYPE_ASCII || tag === rules.exifUserCommentTag || rules.exifUtf16leTags.includes(tag);
      if (!isText) continue;
      const at = size <= 4 ? entry + 8 : u32(entry + 8);
      const value = tiff.subarray(at, Math.min(at + size, tiff.length));
      texts.push(decodeExifValue(tag, value, little));
    }
  };
  readIfd(u32(4));
  return texts;
}

function decodeExifValue(tag: number, value: Uint8Array, little: boolean): string {
  const bytes = Buffer.from(value);
  if (rules.exifUtf16leTags.includes(tag)) return bytes.toString("utf16le");
  if (tag === rules.exifUserCommentTag) {
    const body = bytes.subarray(8);
    if (bytes.subarray(0, 7).toString("latin1") !== "UNICODE") return body.toString("latin1");
    return (little ? body : Buffer.from(body).swap16()).toString("utf16le");
  }
  return bytes.toString("latin1");
}

export class JpegScanner {
  private readonly reader = new FieldReader();
  private readonly metadata: MetadataText;

  constructor(findings: Findings) {
    this.metadata = new MetadataText(findings, "JPEG");
    this.reader.expect(2, 0, () => this.nextMarker());
  }

  feed(chunk: Uint8Array): void {
    this.reader.feed(chunk);
  }

  private nextMarker(): void {
    this.reader.expect(1, 1, ([prefix]) => {
      if (prefix !== MARKER_PREFIX) return this.reader.stop();
      this.markerCode();
    });
  }

  private markerCode(): void {
    this.reader.expect(1, 1, ([marker = 0]) => {
      if (marker === MARKER_PREFIX) return this.markerCode();
      if (marker === START_OF_SCAN || marker === END_OF_IMAGE) return this.reader.stop();
      if (standalone(marker)) return this.nextMarker();
      this.reader.expect(2, 2, (field) => {
        const length = (((field[0] ?? 0) << 8) | (field[1] ?? 0)) - 2;
        if (length < 0) return this.reader.stop();
        const wanted = marker === rules.jpegCommentMarker || marker === rules.jpegApp1Marker;
        this.reader.expect(length, wanted ? length : 0, (data) => {
          if (wanted) this.segment(marker, data);
          this.nextMarker();
        });
      });
    });
  }

  private segment(marker: number, data: Uint8Array): void {
    if (marker === rules.jpegCommentMarker) {
      this.metadata.add("comment", Buffer.from(data).toString("latin1"), data.length);
    } else if (startsWith(data, rules.exifHeader)) {
      const texts = exifText(data.subarray(rules.exifHeader.length)).map((t) => t.replace(/\0+$/, ""));
      this.metadata.add(
        "EXIF text",
        texts.join("\n"),
        texts.reduce((sum, t) => sum + t.length, 0),
      );
    } else if (startsWith(data, rules.xmpHeader)) {
      const xmp = data.subarray(rules.xmpHeader.length);
      this.metadata.add("XMP packet", Buffer.from(xmp).toString("utf8"), xmp.length);
    }
  }
}
