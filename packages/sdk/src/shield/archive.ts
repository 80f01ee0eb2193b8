/**
 * Archive checks on the finished temporary file: a ZIP's central directory (through yauzl) and a gzip's
 * ISIZE trailer give the sizes the archive declares; archive entries are opened, a few bytes each, to see
 * whether they are archives themselves, and a nested archive is extracted (bounded) beside the temporary
 * file to look one level deeper. Nothing here holds more than a stream buffer in memory.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { open, rm, stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import yauzl from "yauzl";
import { type Findings, formatBytes, quote } from "./findings.js";
import { rules } from "./rules.js";
import { typesByMagic } from "./types.js";

export type ArchiveFormat = "zip" | "gzip";

const limits = rules.limits;
/** Enough leading bytes to recognise a ZIP or gzip header. */
const SNIFF_BYTES = 8;
const GZIP_TRAILER_BYTES = 4;

export function archiveFormatOf(head: Uint8Array): ArchiveFormat | null {
  return typesByMagic(head).find((t) => t.archive !== null)?.archive ?? null;
}

/** The first bytes of a stream, then the stream is let go. */
async function firstBytes(stream: Readable, count: number): Promise<Uint8Array> {
  const parts: Buffer[] = [];
  let length = 0;
  try {
    for await (const part of stream) {
      parts.push(part as Buffer);
      length += (part as Buffer).length;
      if (length >= count) break;
    }
  } catch {
    // A stream that fails early (corrupt data, a wrong password) has shown what it could.
  } finally {
    stream.destroy();
  }
  return Buffer.concat(parts).subarray(0, count);
}

/** Copies a stream to `path`, at most `limits.archive_nested_extract_bytes`; false when cut or broken. */
async function extractBounded(stream: Readable, path: string): Promise<boolean> {
  let written = 0;
  let cut = false;
  try {
    await pipeline(
      stream,
      async function* bounded(source: AsyncIterable<Buffer>) {
        for await (const part of source) {
          written += part.length;
          if (written > limits.archive_nested_extract_bytes) {
            cut = true;
            return;
          }
          yield part;
        }
      },
      createWriteStream(path),
    );
    return !cut;
  } catch {
    return false;
  }
}

interface EntrySizes {
  compressed: number;
  uncompressed: number;
}

/** Walks an archive and its nested archives down to `archive_max_depth`, reporting the first bomb trait seen. */
export class ArchiveInspector {
  private extracted = 0;
  private opened = 0;

  constructor(
    private readonly findings: Findings,
    private readonly tempPath: string,
  ) {}

  /** `where` names the archive in detail sentences ("the file", "\"a.zip\" in the file"). */
  async inspect(path: string, format: ArchiveFormat, depth = 1, where = "the file"): Promise<void> {
    if (format === "zip") await this.inspectZip(path, depth, where);
    else await this.inspectGzip(path, depth, where);
  }

  private bomb(detail: string): void {
    this.findings.add("archive_bomb", detail.charAt(0).toUpperCase() + detail.slice(1));
  }

  private get done(): boolean {
    return this.findings.has("archive_bomb");
  }

  /** True (and reported) when an entry's declared sizes break the limits; `subject` names the entry. */
  private checkEntry(entry: EntrySizes, subject: string): boolean {
    const ratio = entry.uncompressed / Math.max(entry.compressed, 1);
    if (entry.uncompressed > limits.archive_entry_uncompressed_bytes && ratio > limits.archive_entry_ratio) {
      this.bomb(
        `${subject} declares ${formatBytes(entry.uncompressed)} uncompressed from ${formatBytes(entry.compressed)} (${Math.round(ratio)}:1, above ${limits.archive_entry_ratio}:1).`,
      );
      return true;
    }
    return false;
  }

  private checkTotal(total: number, where: string): boolean {
    if (total > limits.archive_total_uncompressed_bytes) {
      this.bomb(
        `${where} declares ${formatBytes(total)} uncompressed in total, above the ${formatBytes(limits.archive_total_uncompressed_bytes)} limit.`,
      );
      return true;
    }
    return false;
  }

  /** An archive found inside one at `depth`: too deep is a bomb, otherwise it is extracted and inspected. */
  private async nested(
    format: ArchiveFormat,
    depth: number,
    innerWhere: string,
    open: () => Promise<Readable>,
  ): Promise<void> {
    const inner = depth + 1;
    if (inner > limits.archive_max_depth) {
      this.bomb(
        `Archives nest ${inner} deep (${innerWhere}), above the limit of ${limits.archive_max_depth}.`,
      );
      return;
    }
    const path = `${this.tempPath}.shield-${++this.extracted}`;
    try {
      if (await extractBounded(await open(), path)) await this.inspect(path, format, inner, innerWhere);
    } finally {
      await rm(path, { force: true });
    }
  }

  private async inspectGzip(path: string, depth: number, where: string): Promise<void> {
    const { size } = await stat(path);
    if (size < GZIP_TRAILER_BYTES) return;
    const trailer = Buffer.alloc(GZIP_TRAILER_BYTES);
    const handle = await open(path, "r");
    try {
      await handle.read(trailer, 0, GZIP_TRAILER_BYTES, size - GZIP_TRAILER_BYTES);
    } finally {
      await handle.close();
    }
    const declared = trailer.readUInt32LE(0);
    const content = `the gzip content of ${where}`;
    const sizes = { compressed: size, uncompressed: declared };
    if (this.checkTotal(declared, where) || this.checkEntry(sizes, content)) return;
    const gunzip = () => createReadStream(path).pipe(createGunzip());
    const format = archiveFormatOf(await firstBytes(gunzip(), SNIFF_BYTES));
    if (format !== null) await this.nested(format, depth, content, async () => gunzip());
  }

  private async inspectZip(path: string, depth: number, where: string): Promise<void> {
    let zip: yauzl.ZipFile;
    try {
      // Names stay undecoded so that one odd name ("../x", a backslash) cannot stop the walk; sizes are checked
      // here, against the limits, rather than by yauzl when an entry is read.
      zip = await yauzl.openPromise(path, {
        lazyEntries: true,
        decodeStrings: false,
        validateEntrySizes: false,
      });
    } catch {
      return; // Not a readable ZIP: nothing is declared to check.
    }
    try {
      let total = 0;
      let officeFile = false;
      let macros = false;
      for await (const entry of zip.eachEntry()) {
        const name = Buffer.from(entry.fileName as unknown as Uint8Array).toString("utf8");
        const base = name.slice(name.lastIndexOf("/") + 1);
        if (name === rules.ooxmlMarkerEntry) officeFile = true;
        if (base.toLowerCase() === rules.ooxmlMacroEntry.toLowerCase()) macros = true;
        total += entry.uncompressedSize;
        const sizes = { compressed: entry.compressedSize, uncompressed: entry.uncompressedSize };
        const entryWhere = `${quote(name)} in ${where}`;
        if (this.checkTotal(total, where) || this.checkEntry(sizes, `the entry ${entryWhere}`)) return;
        await this.checkNestedEntry(zip, entry, entryWhere, depth);
        if (this.done) return;
      }
      if (depth === 1 && officeFile && macros) {
        this.findings.add(
          "active_content",
          `The Office file holds ${rules.ooxmlMacroEntry}, a VBA macro project that runs code when enabled.`,
        );
      }
    } catch {
      // A central directory that breaks part way: what was read has been checked.
    } finally {
      zip.close();
    }
  }

  private async checkNestedEntry(
    zip: yauzl.ZipFile,
    entry: yauzl.Entry,
    entryWhere: string,
    depth: number,
  ): Promise<void> {
    if (entry.isEncrypted() || !entry.canDecodeFileData() || entry.compressedSize === 0) return;
    if (this.opened >= limits.archive_entries_opened) return;
    this.opened++;
    const open = () => zip.openReadStreamPromise(entry);
    const format = archiveFormatOf(await firstBytes(await open(), SNIFF_BYTES));
    if (format !== null) await this.nested(format, depth, entryWhere, open);
  }
}
