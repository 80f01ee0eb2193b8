/** Builds the corpus's files from bytes: ZIPs with any declared sizes, PNGs, JPEGs, executables' headers. */
import { crc32, deflateRawSync, deflateSync, gzipSync } from "node:zlib";

export const bytes = (text: string) => Buffer.from(text, "utf8");
export const latin1 = (text: string) => Buffer.from(text, "latin1");

export interface ZipEntry {
  name: string;
  data: Uint8Array;
  /** Overrides what the headers declare (for bombs: huge sizes over a few real bytes). */
  declaredUncompressed?: number;
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n);
  return b;
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
}

/** A ZIP written by hand: deflated entries, then the central directory and its end record. */
export function zip(entries: ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = bytes(entry.name);
    const compressed = deflateRawSync(entry.data);
    const sizes = [
      u32(crc32(entry.data)),
      u32(compressed.length),
      u32(entry.declaredUncompressed ?? entry.data.length),
    ];
    const common = [u16(20), u16(0x0800), u16(8), u16(0), u16(0), ...sizes, u16(name.length), u16(0)];
    const local = Buffer.concat([u32(0x04034b50), ...common, name, compressed]);
    const central = Buffer.concat([
      u32(0x02014b50),
      u16(20),
      ...common,
      u16(0),
      u16(0),
      u16(0),
      u32(0),
      u32(offset),
      name,
    ]);
    locals.push(local);
    centrals.push(central);
    offset += local.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.concat([
    u32(0x06054b50),
    u16(0),
    u16(0),
    u16(entries.length),
    u16(entries.length),
    u32(directory.length),
    u32(offset),
    u16(0),
  ]);
  return Buffer.concat([...locals, directory, end]);
}

/** A gzip stream whose ISIZE trailer declares `declared` bytes instead of the real size. */
export function gzipDeclaring(data: Uint8Array, declared: number): Buffer {
  const gz = Buffer.from(gzipSync(data));
  gz.writeUInt32LE(declared >>> 0, gz.length - 4);
  return gz;
}

function pngChunk(type: string, data: Uint8Array): Buffer {
  const body = Buffer.concat([latin1(type), data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A 1×1 PNG with the given extra chunks before its image data. */
export function png(extra: { type: string; data: Uint8Array }[] = []): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(1, 0);
  header.writeUInt32BE(1, 4);
  header[8] = 8;
  header[9] = 2;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", header),
    ...extra.map((c) => pngChunk(c.type, c.data)),
    pngChunk("IDAT", deflateSync(Buffer.from([0, 0x20, 0x40, 0x60]))),
    pngChunk("IEND", new Uint8Array(0)),
  ]);
}

export const tEXt = (keyword: string, text: string) => ({
  type: "tEXt",
  data: latin1(`${keyword}\0${text}`),
});
export const zTXt = (keyword: string, text: string) => ({
  type: "zTXt",
  data: Buffer.concat([latin1(`${keyword}\0\0`), deflateSync(latin1(text))]),
});

function jpegSegment(marker: number, data: Uint8Array): Buffer {
  const length = Buffer.alloc(2);
  length.writeUInt16BE(data.length + 2);
  return Buffer.concat([Buffer.from([0xff, marker]), length, data]);
}

/** A JPEG skeleton: SOI, the given segments, a scan with a few entropy bytes, EOI. */
export function jpeg(segments: { marker: number; data: Uint8Array }[] = []): Buffer {
  return Buffer.concat([
    Buffer.from([0xff, 0xd8]),
    jpegSegment(0xe0, latin1("JFIF\0\x01\x01\0\0\x01\0\x01\0\0")),
    ...segments.map((s) => jpegSegment(s.marker, s.data)),
    jpegSegment(0xda, Buffer.from([1, 1, 0, 0, 0x3f, 0])),
    Buffer.from([0x12, 0x34, 0xff, 0x00, 0x56, 0xff, 0xd9]),
  ]);
}

/** An EXIF APP1 segment (little-endian TIFF) with one ImageDescription (ASCII) entry. */
export function exifDescription(text: string) {
  const value = latin1(`${text}\0`);
  const ifd = Buffer.concat([u16(1), u16(0x010e), u16(2), u32(value.length), u32(8 + 2 + 12 + 4), u32(0)]);
  return { marker: 0xe1, data: Buffer.concat([latin1("Exif\0\0II"), u16(42), u32(8), ifd, value]) };
}

/** Executable headers followed by binary filler (with NUL bytes, as real ones have). */
export const elf = () =>
  Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(120, 0)]);
export const pe = () => Buffer.concat([latin1("MZ\x90\0\x03\0\0\0"), Buffer.alloc(120, 0)]);
