import { createHash, randomUUID } from "node:crypto";
import { constants } from "node:fs";
import {
  access,
  type FileHandle,
  mkdir,
  open,
  readdir,
  rm,
  rmdir,
  stat,
  statfs,
  writeFile,
} from "node:fs/promises";
import { dirname, isAbsolute, join, resolve, sep } from "node:path";
import { finished, Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { checkRange, FileSink, STREAM_CHUNK } from "./byte-streams.js";
import { BlobNotFoundError, BlobTooLargeError } from "./errors.js";
import { FileThreads } from "./file-threads.js";
import { HashTap } from "./hash-tap.js";
import type { LocalBlobUrls } from "./local-urls.js";
import {
  type BlobStore,
  type ByteRange,
  type DownloadUrlOptions,
  type LeftoverScan,
  type OpenedBlob,
  type PresignedRequest,
  SMALL_BLOB_BYTES,
  type StoredBlob,
  type StoredGroup,
  type UploadUrlOptions,
} from "./port.js";
import { FileSystemResumableStore, RESUMABLE_DIR } from "./resumable/filesystem.js";
import type { UploadLeaseTable } from "./resumable/leases.js";
import { ResumableUploads } from "./resumable/uploads.js";
import { escapePart, StagingOwners, safeDecode } from "./staging-owners.js";

/** src/http/multipart.ts reads its chunk size from here (kept while that file is being reshaped elsewhere). */
export { STREAM_CHUNK };

/** Directory under the root, beside the blobs, where puts are written before they are renamed into place. */
const TEMP_DIR = ".tmp";
const PART = ".part";
/** Under the temp directory: one heartbeat file per live store (StagingOwners). */
const OWNERS_DIR = "owners";

/** A temporary file's name: `{key}~{owner}~{random}.part`, each part escaped. */
interface PartName {
  key: string;
  owner: string;
}

function parsePartName(name: string): PartName | null {
  const [key, owner, random] = name.slice(0, -PART.length).split("~");
  const decoded = key === undefined ? null : safeDecode(key);
  return decoded && owner && random ? { key: decoded, owner } : null;
}

/**
 * Blobs as files under `rootDir` (the embedded default: `DATA_DIR/blobs`). A put is written to a
 * temporary file in the same tree and renamed into place only when complete, so a blob is either
 * all there or absent. Its upload and download URLs are this service's own signed URLs.
 *
 * Several processes may share the directory (instances on one PostgreSQL, over a network file
 * system). A temporary file's name carries its key and its owner, whose lease (StagingOwners)
 * says whether it may still be writing: the leftover sweep removes only what no live owner writes.
 */
export class FileSystemBlobStore implements BlobStore {
  private readonly root: string;
  private readonly tempDir: string;
  /** The puts this store runs now: temporary file → key. Never a crash's leftovers. */
  private readonly puts = new Map<string, string>();
  readonly resumable: ResumableUploads;
  private readonly owners: StagingOwners;
  /** Small blobs are written and read whole there, in one message each (FileThreads). */
  private readonly threads = new FileThreads();

  constructor(
    rootDir: string,
    private readonly urls: LocalBlobUrls,
    /** The tus uploads' leases shared with the other instances on this folder; unset: this process alone. */
    uploadLeases?: UploadLeaseTable,
  ) {
    this.root = resolve(rootDir);
    this.tempDir = join(this.root, TEMP_DIR);
    this.resumable = new ResumableUploads(
      new FileSystemResumableStore(this.root, (key) => this.pathOf(key)),
      uploadLeases,
    );
    this.owners = new StagingOwners(join(this.tempDir, OWNERS_DIR));
  }

  async put(
    key: string,
    body: Readable,
    options: { maxBytes: number | null; contentType?: string },
  ): Promise<StoredBlob> {
    const target = this.pathOf(key);
    const temp = join(this.tempDir, `${escapePart(key)}~${this.owners.selfName}~${randomUUID()}${PART}`);
    this.puts.set(temp, key);
    try {
      await this.owners.start();
      const small = await wholeIfSmall(body, SMALL_BLOB_BYTES);
      if (small) {
        if (options.maxBytes !== null && small.length > options.maxBytes)
          throw new BlobTooLargeError(options.maxBytes);
        await this.threads.writeWhole(temp, target, small);
        return { size: small.length, sha256: createHash("sha256").update(small).digest("hex") };
      }
      // The file exists before any byte flows, so the clean-up below always has it to remove.
      const file = await this.createTemp(temp);
      const sink = new FileSink(file, options.maxBytes);
      const hash = createHash("sha256");
      try {
        await pipeline(body, new HashTap(hash), sink);
      } finally {
        await file.close();
      }
      await this.threads.moveIntoPlace(temp, target);
      return { size: sink.bytes, sha256: hash.digest("hex") };
    } catch (error) {
      body.destroy();
      await rm(temp, { force: true });
      throw error;
    } finally {
      this.puts.delete(temp);
    }
  }

  /** Creates a temporary file; the temp directory is made on first use, and again if it went. */
  private async createTemp(temp: string): Promise<FileHandle> {
    try {
      return await open(temp, "wx", 0o600);
    } catch (error) {
      if (!isMissing(error as NodeJS.ErrnoException)) throw error;
      await mkdir(this.tempDir, { recursive: true });
      return open(temp, "wx", 0o600);
    }
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    if (range) checkRange(range);
    const blob = await this.open(key);
    if (!blob) throw new BlobNotFoundError(key);
    if (range && range.start >= blob.size) {
      await blob.close();
      throw new RangeError(`range ${range.start}-${range.end} not satisfiable: size ${blob.size}`);
    }
    return blob.read(range);
  }

  async open(key: string): Promise<OpenedBlob | null> {
    const path = this.pathOf(key);
    const whole = await this.threads.readWhole(path, SMALL_BLOB_BYTES);
    if (whole.kind === "missing") return null;
    if (whole.kind === "bytes") return inMemory(whole.bytes);
    const file = await open(path, "r").catch((error: NodeJS.ErrnoException) => {
      if (isMissing(error)) return null;
      throw error;
    });
    if (!file) return null;
    try {
      const { size } = await file.stat();
      const span = (range?: ByteRange) => spanOf(size, range);
      return {
        size,
        // An end keeps each read to what is left: without one a 1 KiB file still gets a 1 MiB buffer.
        read: async (range) => file.createReadStream({ ...span(range), highWaterMark: STREAM_CHUNK }),
        bytes: async (range) => {
          try {
            const { start, end } = span(range);
            return await readExactly(file, start, size === 0 ? 0 : end - start + 1);
          } finally {
            await file.close();
          }
        },
        close: () => file.close(),
      };
    } catch (error) {
      await file.close();
      throw error;
    }
  }

  async stat(key: string): Promise<{ size: number } | null> {
    try {
      const info = await stat(this.pathOf(key));
      return info.isFile() ? { size: info.size } : null;
    } catch (error) {
      if (isMissing(error as NodeJS.ErrnoException)) return null;
      throw error;
    }
  }

  async delete(keys: string[]): Promise<void> {
    const paths = keys.map((key) => this.pathOf(key));
    await this.resumable.remove(keys);
    for (const path of paths) {
      await rm(path, { force: true });
      await this.removeEmptyParents(path);
    }
  }

  async uploadUrl(key: string, options: UploadUrlOptions): Promise<PresignedRequest> {
    this.pathOf(key);
    return this.urls.upload(key, options);
  }

  async downloadUrl(key: string, options: DownloadUrlOptions): Promise<string> {
    this.pathOf(key);
    return this.urls.download(key, options);
  }

  readonly leftovers: LeftoverScan = {
    removeAbandonedParts: async () => {
      const abandoned = (await this.stagingFiles()).filter((part) => !part.live).map((part) => part.path);
      for (const path of abandoned) await rm(path, { force: true });
      return abandoned.length;
    },
    groups: async (prefix) => {
      const dir = this.pathOf(prefix);
      const names = await readdir(dir).catch(() => []);
      const writing = (await this.stagingFiles()).filter((part) => part.live).map((part) => part.key);
      const groups: StoredGroup[] = [];
      for (const name of names) {
        const group = await this.group(`${prefix}/${name}`, name, writing);
        if (group) groups.push(group);
      }
      return groups;
    },
    othersWriting: () => this.owners.othersAlive(),
  };

  /**
   * The temporary files in the folder, each with its key and whether a put may still be writing
   * it: one of this store's, or one whose owner is alive. A name that cannot be read (an older
   * version's, or anything else) has no live owner.
   */
  private async stagingFiles(): Promise<{ path: string; key: string | null; live: boolean }[]> {
    const names = (await readdir(this.tempDir).catch(() => [] as string[])).filter((name) =>
      name.endsWith(PART),
    );
    const alive = new Map<string, boolean>();
    const files: { path: string; key: string | null; live: boolean }[] = [];
    for (const name of names) {
      const path = join(this.tempDir, name);
      const parsed = parsePartName(name);
      let live = this.puts.has(path);
      if (!live && parsed && parsed.owner !== this.owners.selfName) {
        if (!alive.has(parsed.owner)) alive.set(parsed.owner, await this.owners.isAlive(parsed.owner));
        live = alive.get(parsed.owner) ?? false;
      }
      files.push({ path, key: parsed?.key ?? null, live });
    }
    return files;
  }

  /** The blobs directly under `prefix`, or null when it is not a directory (any more). */
  /** `writing`: the keys of live temporary files; null for one whose key cannot be read (it might be any). */
  private async group(prefix: string, name: string, writing: (string | null)[]): Promise<StoredGroup | null> {
    const files = await readdir(this.pathOf(prefix), { withFileTypes: true }).catch(() => null);
    if (!files) return null;
    const keys = files.filter((file) => file.isFile()).map((file) => `${prefix}/${file.name}`);
    let newestWriteMs = 0;
    for (const key of keys) {
      const info = await stat(this.pathOf(key)).catch(() => null);
      if (info) newestWriteMs = Math.max(newestWriteMs, info.mtimeMs);
    }
    return {
      name,
      keys,
      newestWriteMs,
      writing: writing.some((key) => key === null || key.startsWith(`${prefix}/`)),
    };
  }

  /** Ends this store's lease: its heartbeat goes, so the others know at once it writes no more. */
  async close(): Promise<void> {
    await this.owners.stop();
    await this.threads.close();
  }

  /** Writes and removes a probe file, so a read-only or full disk answers with an error. */
  async ping(): Promise<void> {
    await mkdir(this.tempDir, { recursive: true });
    await access(this.root, constants.W_OK);
    const probe = join(this.tempDir, `${randomUUID()}.ping`);
    try {
      await writeFile(probe, "ping", { flag: "wx" });
    } finally {
      await rm(probe, { force: true });
    }
  }

  async freeBytes(): Promise<number> {
    const { bavail, bsize } = await statfs(this.root);
    return bavail * bsize;
  }

  /** The file of a key: relative, inside the root, no `.`/`..` or empty segments, not in the temp area. */
  private pathOf(key: string): string {
    const segments = key.split("/");
    if (
      key.length === 0 ||
      key.length > 1024 ||
      isAbsolute(key) ||
      /[\\\0]/.test(key) ||
      segments.some((s) => s === "" || s === "." || s === "..") ||
      segments[0] === TEMP_DIR ||
      segments[0] === RESUMABLE_DIR
    )
      throw new Error(`invalid blob key ${JSON.stringify(key)}`);
    // Relative, with no empty, "." or ".." segment: the joined path cannot leave the root.
    return join(this.root, key);
  }

  /** Removes the directories a key left empty, up to (not including) the root. */
  private async removeEmptyParents(path: string): Promise<void> {
    for (let dir = dirname(path); dir !== this.root && dir.startsWith(this.root + sep); dir = dirname(dir)) {
      try {
        await rmdir(dir);
      } catch {
        return; // not empty (or already gone): stop here
      }
    }
  }
}

/** The inclusive span a read of `range` covers in a blob of `size` bytes (the end clamped to the last byte). */
function spanOf(size: number, range?: ByteRange): { start: number; end: number } {
  const start = range?.start ?? 0;
  return { start, end: Math.max(Math.min(range?.end ?? size - 1, size - 1), 0) };
}

/** A small blob read whole: served from memory, nothing left open. */
function inMemory(bytes: Buffer): OpenedBlob {
  const slice = (range?: ByteRange) => {
    const { start, end } = spanOf(bytes.length, range);
    return bytes.length === 0 ? bytes : bytes.subarray(start, end + 1);
  };
  return {
    size: bytes.length,
    read: async (range) => Readable.from([slice(range)], { objectMode: false }),
    bytes: async (range) => slice(range),
    close: async () => {},
  };
}

/**
 * A body of at most `limit` bytes, read whole; null for a longer one, which is then left as it was
 * (what was read of it is put back at its front) for the caller to pipe. A body that fails or
 * closes before its end fails with what a pipeline would have failed with.
 */
export function wholeIfSmall(body: Readable, limit: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onReadable = () => {
      for (let chunk = body.read() as Buffer | null; chunk !== null; chunk = body.read() as Buffer | null) {
        chunks.push(chunk);
        size += chunk.length;
        if (size > limit) {
          stop();
          // Until the caller pipes the rest, an error must not go unheard: the stream keeps it
          // (`errored`), and the pipeline the caller starts then fails with it.
          body.on("error", () => {});
          body.unshift(Buffer.concat(chunks, size));
          resolve(null);
          return;
        }
      }
    };
    const stopWatching = finished(body, { writable: false }, (error) => {
      stop();
      if (error) reject(error);
      else resolve(Buffer.concat(chunks, size));
    });
    const stop = () => {
      body.off("readable", onReadable);
      stopWatching();
    };
    body.on("readable", onReadable);
  });
}

function isMissing(error: NodeJS.ErrnoException): boolean {
  return error.code === "ENOENT" || error.code === "ENOTDIR";
}

/** `length` bytes of an open file from `position`; fewer only when the file ends first. */
async function readExactly(file: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await file.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}
