import { Worker } from "node:worker_threads";
import { EmbeddedLock } from "./embedded-lock.js";

interface Reply {
  id: number;
  result?: unknown;
  error?: { message: string; fields: Record<string, unknown> };
}

/**
 * PostgreSQL's own setting is 128 MB of shared buffers, all of it resident in PGlite's WebAssembly
 * memory once touched. An embedded Handoff's working set (the newest events, the live transfers) is
 * far smaller; 16 MB keeps it cached (the operating system's page cache holds the rest of the
 * files) and the process within its memory budget.
 */
const EMBEDDED_SETTINGS = ["shared_buffers = 16MB"];
const WORKER_YOUNG_GENERATION_MB = 8;

/**
 * Creates a new data directory (initdb) in a short-lived child process: initdb grows PGlite's
 * WebAssembly memory to about 700 MB, which a process never gives back, so done in the server it
 * would stay resident for the server's whole life.
 */
const INITDB_SOURCE = `
const [pglite, directory] = process.argv.slice(1);
const { PGlite } = await import(pglite);
const db = new PGlite(directory);
await db.waitReady;
await db.close();
`;

/**
 * The worker's code: PGlite's WebAssembly runs there, so its work no longer takes turns with HTTP
 * parsing, JSON and file streaming on the server's event loop. Messages are handled in order and
 * PGlite runs one statement at a time. Kept as source text (evaluated) so it runs the same from the
 * compiled build and from the TypeScript sources; PGlite is imported by the URL the main thread
 * resolved.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { spawnSync } = require("node:child_process");
const { existsSync } = require("node:fs");
const { join } = require("node:path");
(async () => {
  const { directory, pglite, initdb, settings } = workerData;
  if (directory && !existsSync(join(directory, "PG_VERSION"))) {
    const made = spawnSync(process.execPath, ["--input-type=module", "-e", initdb, pglite, directory], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    if (made.status !== 0) throw new Error("initialising the database failed: " + made.stderr);
  }
  const { PGlite } = await import(pglite);
  const db = new PGlite(directory ?? undefined, { postgresqlconf: settings });
  parentPort.on("message", async (message) => {
    try {
      const result = message.kind === "close" ? await db.close() : await db.query(message.sql, message.params);
      parentPort.postMessage({ id: message.id, result: result ?? null });
    } catch (error) {
      const fields = {};
      for (const [key, value] of Object.entries(error)) {
        if (["string", "number", "boolean"].includes(typeof value)) fields[key] = value;
      }
      parentPort.postMessage({ id: message.id, error: { message: error.message, fields } });
    }
  });
  parentPort.postMessage({ id: 0, result: null });
})().catch((error) => parentPort.postMessage({ id: 0, error: { message: String(error), fields: {} } }));
`;

/**
 * PGlite in a worker thread, with the three members knex-pglite uses of a PGlite instance
 * (`waitReady`, `query`, `close`): every statement crosses to the thread and its rows come back.
 */
export class PGliteThread {
  readonly waitReady: Promise<void>;
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  private nextId = 1;
  /** Held from opening to closing: one process at a time writes a data folder. */
  private readonly lock: EmbeddedLock | null;

  constructor(directory: string | null) {
    this.lock = directory ? EmbeddedLock.acquire(directory) : null;
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      // The thread's own JavaScript is small (messages in, rows out); V8's default young generation
      // for it would hold tens of MB of garbage between scavenges.
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      workerData: {
        directory,
        pglite: import.meta.resolve("@electric-sql/pglite"),
        initdb: INITDB_SOURCE,
        settings: EMBEDDED_SETTINGS,
      },
    });
    this.waitReady = new Promise((resolve, reject) => this.pending.set(0, { resolve, reject })).then(
      () => {},
    );
    this.worker.on("message", (reply: Reply) => this.settle(reply));
    this.worker.on("error", (error) => this.failAll(error));
    this.worker.on("exit", (code) => this.failAll(new Error(`the database thread exited with ${code}`)));
  }

  query(sql: string, params: unknown[] = [], _options?: unknown): Promise<unknown> {
    return this.send({ kind: "query", sql, params });
  }

  async close(): Promise<void> {
    try {
      await this.send({ kind: "close" });
      await this.worker.terminate();
    } finally {
      this.lock?.release();
    }
  }

  private send(message: { kind: "query" | "close"; sql?: string; params?: unknown[] }): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...message, id });
    });
  }

  private settle(reply: Reply): void {
    const waiting = this.pending.get(reply.id);
    if (!waiting) return;
    this.pending.delete(reply.id);
    if (reply.error) waiting.reject(Object.assign(new Error(reply.error.message), reply.error.fields));
    else waiting.resolve(reply.result);
  }

  private failAll(error: Error): void {
    for (const waiting of this.pending.values()) waiting.reject(error);
    this.pending.clear();
  }
}
