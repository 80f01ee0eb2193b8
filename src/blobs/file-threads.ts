import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";

/**
 * How many threads do the whole-file writes: one a core, two to four. Each waits on one fsync at a
 * time, so two let concurrent puts sync side by side; past the cores, more threads only take
 * turns on them with the request thread (on two cores, one, two and four ran within the
 * benchmark's noise of each other).
 */
export const FILE_THREADS = Math.min(4, Math.max(2, availableParallelism()));
/** The threads' own JavaScript is a message loop: a small young generation is plenty. */
const THREAD_YOUNG_GENERATION_MB = 2;

/**
 * The threads' code, kept as source text (evaluated) so it runs the same from the compiled build
 * and from the TypeScript sources, as the embedded database's thread does. Each message is one
 * whole operation, done with synchronous calls: the thread is its own, so blocking it blocks no
 * request.
 */
const THREAD_SOURCE = `
const { parentPort } = require("node:worker_threads");
const fs = require("node:fs");
const { dirname } = require("node:path");

function createTemp(temp) {
  try {
    return fs.openSync(temp, "wx", 0o600);
  } catch (error) {
    // The temporary directory is made on first use, and again if it went.
    if (error.code !== "ENOENT") throw error;
    fs.mkdirSync(dirname(temp), { recursive: true });
    return fs.openSync(temp, "wx", 0o600);
  }
}

function writeWhole({ temp, target, bytes }) {
  const fd = createTemp(temp);
  try {
    for (let written = 0; written < bytes.length; ) written += fs.writeSync(fd, bytes, written);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  moveIntoPlace({ temp, target });
}

function moveIntoPlace({ temp, target }) {
  // A delete may remove the (empty) directory between the two calls: make it again and retry.
  for (let attempt = 1; ; attempt++) {
    fs.mkdirSync(dirname(target), { recursive: true });
    try {
      return fs.renameSync(temp, target);
    } catch (error) {
      if (error.code !== "ENOENT" || attempt >= 5) throw error;
    }
  }
}

function readWhole({ path, limit }) {
  let fd;
  try {
    fd = fs.openSync(path, "r");
  } catch (error) {
    if (error.code === "ENOENT" || error.code === "ENOTDIR") return { kind: "missing" };
    throw error;
  }
  try {
    const size = fs.fstatSync(fd).size;
    if (size > limit) return { kind: "large" };
    const bytes = Buffer.allocUnsafe(size);
    let filled = 0;
    while (filled < size) {
      const read = fs.readSync(fd, bytes, filled, size - filled, filled);
      if (read === 0) break;
      filled += read;
    }
    return { kind: "bytes", bytes: bytes.subarray(0, filled) };
  } finally {
    fs.closeSync(fd);
  }
}

parentPort.on("message", (message) => {
  try {
    const op = { write: writeWhole, move: moveIntoPlace, read: readWhole }[message.op];
    const result = op(message);
    parentPort.postMessage({ id: message.id, result });
  } catch (error) {
    const { code, errno, syscall, path } = error;
    parentPort.postMessage({ id: message.id, error: { message: error.message, code, errno, syscall, path } });
  }
});
`;

/** What a whole read found: no file, one over the limit (not read), or its bytes. */
export type WholeRead = { kind: "missing" } | { kind: "large" } | { kind: "bytes"; bytes: Buffer };

type Request =
  | { op: "write"; temp: string; target: string; bytes: Buffer }
  | { op: "move"; temp: string; target: string }
  | { op: "read"; path: string; limit: number };

interface Reply {
  id: number;
  result?: unknown;
  error?: { message: string; code?: string; errno?: number; syscall?: string; path?: string };
}

interface Waiting {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** One thread and the requests it has not answered yet. */
class FileThread {
  readonly waiting = new Map<number, Waiting>();
  private readonly worker: Worker;

  constructor(onGone: (thread: FileThread) => void) {
    this.worker = new Worker(THREAD_SOURCE, {
      eval: true,
      resourceLimits: { maxYoungGenerationSizeMb: THREAD_YOUNG_GENERATION_MB },
    });
    // Idle threads must not keep a finished process alive.
    this.worker.unref();
    this.worker.on("message", (reply: Reply) => this.settle(reply));
    const fail = (error: Error) => {
      onGone(this);
      for (const waiting of this.waiting.values()) waiting.reject(error);
      this.waiting.clear();
    };
    this.worker.on("error", fail);
    this.worker.on("exit", (code) => fail(new Error(`a file thread exited with ${code}`)));
  }

  ask(id: number, request: Request): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ ...request, id });
    });
  }

  terminate(): Promise<number> {
    return this.worker.terminate();
  }

  private settle({ id, result, error }: Reply): void {
    const waiting = this.waiting.get(id);
    if (!waiting) return;
    this.waiting.delete(id);
    // The file system's error as fs/promises would have thrown it: its code decides what the caller says.
    if (error) waiting.reject(Object.assign(new Error(error.message), stripUndefined(error)));
    else waiting.resolve(result);
  }
}

const stripUndefined = (fields: Reply["error"] & object) =>
  Object.fromEntries(
    Object.entries(fields).filter(([key, value]) => key !== "message" && value !== undefined),
  );

/** Threads that take one kind of work, each request to the least busy, up to `count` of them. */
class Lane {
  private readonly threads: FileThread[] = [];

  constructor(private readonly count: number) {}

  /** Sends to the least busy thread, starting one while there are fewer than `count`. */
  ask(id: number, request: Request): Promise<unknown> {
    let thread = this.threads.reduce<FileThread | undefined>(
      (best, t) => (!best || t.waiting.size < best.waiting.size ? t : best),
      undefined,
    );
    if (!thread || (thread.waiting.size > 0 && this.threads.length < this.count)) {
      thread = new FileThread((gone) => {
        const index = this.threads.indexOf(gone);
        if (index >= 0) this.threads.splice(index, 1);
      });
      this.threads.push(thread);
    }
    return thread.ask(id, request);
  }

  async close(): Promise<void> {
    const threads = this.threads.splice(0);
    await Promise.all(threads.map((thread) => thread.terminate()));
  }
}

/**
 * Small files written and read whole by a few threads of their own, each operation in one message
 * instead of one trip through libuv's pool per call. A one-time transfer's put (open, write, fsync,
 * close, mkdir, rename) and its download (open, stat, read, close) were ten such trips, each a
 * wake-up of a pool thread that took the core from the request thread on a small machine; as two
 * messages they cost it about a fifth less a pair (docs/design.md). Reads have a thread of their
 * own: behind the writers' fsyncs, a download of a file in the page cache waited milliseconds for
 * work that takes microseconds. Threads start on first use, and a thread that dies is replaced by
 * the next request, until close.
 */
export class FileThreads {
  private readonly writes: Lane;
  private readonly reads = new Lane(1);
  private nextId = 1;
  private closed = false;

  constructor(writers = FILE_THREADS) {
    this.writes = new Lane(writers);
  }

  /** Writes `bytes` to `temp` (created, never overwritten), fsyncs it, and renames it to `target`. */
  async writeWhole(temp: string, target: string, bytes: Buffer): Promise<void> {
    await this.ask(this.writes, { op: "write", temp, target, bytes });
  }

  /** Renames a finished `temp` to `target`, making the target's folder first. */
  async moveIntoPlace(temp: string, target: string): Promise<void> {
    await this.ask(this.writes, { op: "move", temp, target });
  }

  /** The whole file at `path` when it has at most `limit` bytes. */
  async readWhole(path: string, limit: number): Promise<WholeRead> {
    const read = (await this.ask(this.reads, { op: "read", path, limit })) as WholeRead;
    if (read.kind !== "bytes") return read;
    // A thread's Buffer arrives as a plain Uint8Array.
    const { buffer, byteOffset, byteLength } = read.bytes;
    return { kind: "bytes", bytes: Buffer.from(buffer, byteOffset, byteLength) };
  }

  /** Stops the threads; what is asked afterwards is refused (a closed store writes nothing more). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([this.writes.close(), this.reads.close()]);
  }

  private ask(lane: Lane, request: Request): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error("the blob store is closed"));
    return lane.ask(this.nextId++, request);
  }
}
