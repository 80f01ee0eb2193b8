import type { Worker } from "node:worker_threads";
import type { TreeHasher } from "./hasher.js";
import { transparencyThread } from "./threads.js";

/** What the hasher's thread is started with. */
export interface HasherThreadData {
  databaseUrl: string;
  origin: string;
  seed: Uint8Array;
}

/** To the thread: an operation of TreeHasher (answered with its id), or the signing gate. */
export type ThreadRequest = { id: number; op: "start" | "signNow" | "stop" } | { op: "gate"; open: boolean };

/** From the thread: an operation's end (with its error as text), or an error of the hasher's own. */
export type ThreadReply = { id: number; error?: string } | { report: string };

/** How long after a thread died its replacement starts: a thread that dies at once does not spin. */
const REPLACE_AFTER_MS = 1000;

interface Waiting {
  resolve(): void;
  reject(error: Error): void;
}

/**
 * The log's hasher on a thread of its own (hasher-thread.ts), with its own connections to the
 * PostgreSQL database at `databaseUrl`: hashing and writing the tree took some 8 % of the request
 * thread's CPU under load, and that thread is the service's bottleneck (docs/custody.md). Each
 * operation is a message; the thread's errors come to `onError` as text. A thread that dies is
 * reported and replaced, until stop.
 */
export class ThreadHasher implements TreeHasher {
  private worker: Worker | null = null;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private signing = false;
  private stopping = true;
  private replacing: NodeJS.Timeout | null = null;

  constructor(
    private readonly thread: HasherThreadData,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** The thread the hasher runs on (its `threadId`), null while none runs: to show where it runs. */
  get threadId(): number | null {
    return this.worker?.threadId ?? null;
  }

  /** Starts the thread and its hasher; one that fails to start is stopped again. */
  async start(): Promise<void> {
    this.stopping = false;
    try {
      await this.ask("start", this.startThread());
    } catch (error) {
      await this.stop().catch(() => undefined);
      throw error;
    }
  }

  signNow(): Promise<void> {
    return this.ask("signNow", this.worker);
  }

  gateSigning(open: boolean): void {
    if (open === this.signing) return;
    this.signing = open;
    this.worker?.postMessage({ op: "gate", open } satisfies ThreadRequest);
  }

  /** Stops the hasher in its thread (its transaction ends), then the thread itself. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.replacing) clearTimeout(this.replacing);
    this.replacing = null;
    const worker = this.worker;
    this.worker = null;
    if (!worker) return;
    try {
      await this.ask("stop", worker);
    } finally {
      await worker.terminate();
    }
  }

  private startThread(): Worker {
    const worker = transparencyThread("hasher-thread", this.thread);
    this.worker = worker;
    worker.on("message", (reply: ThreadReply) => this.settle(reply));
    let failure: Error | null = null;
    worker.on("error", (error) => {
      failure = error;
    });
    worker.on("exit", (code) => this.gone(worker, failure ?? new Error(`exited with code ${code}`)));
    // A replacement signs as its predecessor did; messages arrive in order, so before it starts.
    if (this.signing) worker.postMessage({ op: "gate", open: true } satisfies ThreadRequest);
    return worker;
  }

  private ask(op: "start" | "signNow" | "stop", worker: Worker | null): Promise<void> {
    if (!worker) return Promise.reject(new Error("the log's hasher thread is not running"));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, op } satisfies ThreadRequest);
    });
  }

  private settle(reply: ThreadReply): void {
    if ("report" in reply) {
      this.onError(new Error(reply.report));
      return;
    }
    const waiting = this.waiting.get(reply.id);
    this.waiting.delete(reply.id);
    if (reply.error === undefined) waiting?.resolve();
    else waiting?.reject(new Error(reply.error));
  }

  /** The thread ended: what waited on it fails; unless stopping, it is reported and replaced. */
  private gone(worker: Worker, why: Error): void {
    for (const waiting of this.waiting.values()) waiting.reject(why);
    this.waiting.clear();
    if (this.worker !== worker || this.stopping) return;
    this.worker = null;
    this.onError(new Error(`the log's hasher thread died: ${why.message}`, { cause: why }));
    this.replacing = setTimeout(() => {
      this.replacing = null;
      if (this.stopping) return;
      const replacement = this.startThread();
      // One that cannot start is ended, and so reported and replaced in turn.
      this.ask("start", replacement).catch((error: unknown) => {
        this.onError(error);
        void replacement.terminate();
      });
    }, REPLACE_AFTER_MS);
    this.replacing.unref();
  }
}
