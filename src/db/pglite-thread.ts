import { Worker } from "node:worker_threads";

interface Reply {
  id: number;
  result?: unknown;
  error?: { message: string; fields: Record<string, unknown> };
}

/**
 * The worker's code: PGlite's WebAssembly runs there, so its work no longer takes turns with HTTP
 * parsing, JSON and file streaming on the server's event loop. Messages are handled in order and
 * PGlite runs one statement at a time. Kept as source text (evaluated) so it runs the same from the
 * compiled build and from the TypeScript sources; PGlite is imported by the URL the main thread
 * resolved.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
(async () => {
  const { PGlite } = await import(workerData.pglite);
  const db = new PGlite(workerData.directory ?? undefined);
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

  constructor(directory: string | null) {
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { directory, pglite: import.meta.resolve("@electric-sql/pglite") },
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
    await this.send({ kind: "close" });
    await this.worker.terminate();
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
