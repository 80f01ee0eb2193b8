import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { type FileHandle, mkdir, open, readdir, readFile, rename, rm, rmdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { FileSink } from "../byte-streams.js";
import { BlobTooLargeError } from "../errors.js";
import { HashTap } from "../hash-tap.js";
import {
  type AppendRequest,
  ChecksumMismatchError,
  nothingMoreFits,
  OffsetMismatchError,
  type ResumableStore,
  type UploadTarget,
  UploadTerminatedError,
} from "./port.js";

/** Directory under the blob root holding uploads in progress: `.resumable/{key}/{data,state.json}`. */
export const RESUMABLE_DIR = ".resumable";
const DATA = "data";
const STATE = "state.json";

/** What is committed of one upload: the bytes of `data` up to `offset` are on disk. */
interface UploadState {
  offset: number;
  terminated: boolean;
  /** When the upload's link expires (ms since the epoch): the purge's clock. */
  expiresAtMs: number;
}

/**
 * tus uploads on the local filesystem. Bytes are appended to `data`, fsynced, and only then counted
 * in `state.json` (replaced atomically: written, fsynced, renamed, directory fsynced), so the
 * committed offset never names a byte a crash could lose. Bytes of `data` past it (a request cut
 * off by kill -9) are cut before the next append. At the declared length `data` is renamed to the
 * blob's own path, where confirm and downloads find it.
 */
export class FileSystemResumableStore implements ResumableStore {
  constructor(
    private readonly root: string,
    /** The blob store's path of a key (which also checks the key). */
    private readonly blobPath: (key: string) => string,
  ) {}

  async offset(target: UploadTarget): Promise<number | "terminated"> {
    const state = await this.readState(target.key);
    if (state?.terminated) return "terminated";
    const blob = await this.storedSize(target.key);
    if (blob !== null) return blob;
    if (state && state.offset === target.length) return this.finish(target);
    if (!state && target.length === 0) {
      // An empty file is whole from the start: a client has nothing to PATCH.
      await this.begin(target);
      return this.finish(target);
    }
    return state?.offset ?? 0;
  }

  async append(target: UploadTarget, request: AppendRequest): Promise<number> {
    const current = await this.offset(target);
    if (current === "terminated") throw new UploadTerminatedError();
    if (request.offset !== current) throw new OffsetMismatchError(current);
    if (current === target.length) return nothingMoreFits(request.body, target.length);
    const state = (await this.readState(target.key)) ?? (await this.begin(target));
    const file = await open(
      join(this.dirOf(target.key), DATA),
      constants.O_RDWR | constants.O_CREAT | constants.O_APPEND,
      0o600,
    );
    try {
      return await this.write(target, state, file, request);
    } finally {
      await file.close();
    }
  }

  private async write(
    target: UploadTarget,
    state: UploadState,
    file: FileHandle,
    request: AppendRequest,
  ): Promise<number> {
    const start = state.offset;
    await file.truncate(start);
    let commits = Promise.resolve();
    const commit = (offset: number) => {
      commits = commits.then(() => this.writeState(target.key, { ...state, offset }));
      return commits;
    };
    const sink = new FileSink(
      file,
      target.length - start,
      request.interimCommits ? (bytes) => void commit(start + bytes).catch(() => {}) : null,
    );
    const tap = request.checksum ? new HashTap(createHash(request.checksum.algorithm)) : null;
    try {
      await (tap ? pipeline(request.body, tap, sink) : pipeline(request.body, sink));
    } catch (error) {
      await sink.idle();
      await commits.catch(() => {});
      if (tap || error instanceof BlobTooLargeError) {
        await file.truncate(start);
        await this.writeState(target.key, { ...state, offset: start });
      } else {
        // The connection broke off: what arrived is kept, as a tus client expects.
        const { size } = await file.stat();
        await file.datasync();
        await commit(size);
      }
      throw error;
    }
    if (tap && request.checksum && !tap.hash.digest().equals(request.checksum.digest)) {
      await commits.catch(() => {});
      await file.truncate(start);
      await this.writeState(target.key, { ...state, offset: start });
      throw new ChecksumMismatchError(request.checksum.algorithm);
    }
    const offset = start + sink.bytes;
    await commit(offset);
    return offset === target.length ? this.finish(target) : offset;
  }

  async terminate(target: UploadTarget): Promise<void> {
    await this.writeState(target.key, {
      offset: 0,
      terminated: true,
      expiresAtMs: target.expiresAt.getTime(),
    });
    await rm(join(this.dirOf(target.key), DATA), { force: true });
    await rm(this.blobPath(target.key), { force: true });
  }

  async purgeExpired(now: Date, busy: (key: string) => boolean): Promise<number> {
    let purged = 0;
    for (const key of await this.keys()) {
      const state = await this.readState(key);
      if (!state || state.expiresAtMs > now.getTime() || busy(key)) continue;
      await this.removeDir(key);
      purged++;
    }
    return purged;
  }

  async remove(keys: string[]): Promise<void> {
    for (const key of keys) await this.removeDir(key);
  }

  /** Every key with upload state: `transfers/{transferId}/{fileId}`. */
  private async keys(): Promise<string[]> {
    const base = join(this.root, RESUMABLE_DIR, "transfers");
    const keys: string[] = [];
    for (const transfer of await readdir(base).catch(() => [])) {
      for (const file of await readdir(join(base, transfer)).catch(() => []))
        keys.push(`transfers/${transfer}/${file}`);
    }
    return keys;
  }

  private dirOf(key: string): string {
    this.blobPath(key);
    return join(this.root, RESUMABLE_DIR, ...key.split("/"));
  }

  private async begin(target: UploadTarget): Promise<UploadState> {
    const state = { offset: 0, terminated: false, expiresAtMs: target.expiresAt.getTime() };
    await this.writeState(target.key, state);
    return state;
  }

  /** Moves the whole upload to the blob's path (durably), then forgets it; returns the length. */
  private async finish(target: UploadTarget): Promise<number> {
    const data = join(this.dirOf(target.key), DATA);
    if (target.length === 0) await (await open(data, "a", 0o600)).close();
    const blob = this.blobPath(target.key);
    await mkdir(dirname(blob), { recursive: true });
    await rename(data, blob);
    await syncDirectory(dirname(blob));
    await this.removeDir(target.key);
    return target.length;
  }

  private async storedSize(key: string): Promise<number | null> {
    const info = await stat(this.blobPath(key)).catch(() => null);
    return info?.isFile() ? info.size : null;
  }

  private async readState(key: string): Promise<UploadState | null> {
    const text = await readFile(join(this.dirOf(key), STATE), "utf8").catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT" || error.code === "ENOTDIR") return null;
        throw error;
      },
    );
    return text === null ? null : (JSON.parse(text) as UploadState);
  }

  /** Replaces the state atomically and durably: a crash leaves the old one or the new one. */
  private async writeState(key: string, state: UploadState): Promise<void> {
    const dir = this.dirOf(key);
    await mkdir(dir, { recursive: true });
    const temp = join(dir, `${STATE}.next`);
    const file = await open(temp, "w", 0o600);
    try {
      await file.writeFile(JSON.stringify(state));
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temp, join(dir, STATE));
    await syncDirectory(dir);
  }

  private async removeDir(key: string): Promise<void> {
    const dir = this.dirOf(key);
    await rm(dir, { recursive: true, force: true });
    await rmdir(dirname(dir)).catch(() => {}); // the transfer's directory, once its last upload went
  }
}

/** fsync of a directory: a rename or a new file in it survives a power cut. */
async function syncDirectory(path: string): Promise<void> {
  const dir = await open(path, "r");
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}
