import { availableParallelism } from "node:os";
import type { Worker } from "node:worker_threads";
import { entryLeafHash, HASH_SIZE } from "@handoff/sdk/transparency";
import type { EventStore, Position } from "../eventstore/port.js";
import { entryOf } from "./entries.js";
import { transparencyThread } from "./threads.js";

/** `count` leaves of the log, starting with the event after `after` (null: the first event). */
export interface LeafRun {
  after: Position | null;
  count: number;
}

/** A run's leaves recomputed from the stored events: fewer than asked where the log ends sooner. */
export interface HashedRun {
  /** The leaf hashes, HASH_SIZE bytes each, in log order. */
  hashes: Uint8Array;
  /** The position of each leaf's event. */
  positions: Position[];
}

/** Recomputes runs of leaves; several may be asked at once, each answered on its own. */
export interface LeafHashers {
  hash(run: LeafRun): Promise<HashedRun>;
  close(): Promise<void>;
}

const READ_BATCH = 5120;

/** Reads a run's events from the store in batches and hashes each as its leaf (decisions 9.1). */
export async function hashRun(store: EventStore, run: LeafRun): Promise<HashedRun> {
  const hashes = new Uint8Array(run.count * HASH_SIZE);
  const positions: Position[] = [];
  let from = run.after;
  while (positions.length < run.count) {
    const events = await store.readAll(from, Math.min(READ_BATCH, run.count - positions.length));
    if (events.length === 0) break;
    for (const event of events) {
      hashes.set(entryLeafHash(entryOf(event)), positions.length * HASH_SIZE);
      positions.push(event.position);
    }
    from = events.at(-1)?.position ?? from;
  }
  return { hashes: hashes.subarray(0, positions.length * HASH_SIZE), positions };
}

/** On the calling thread, through the service's own store: for the embedded database and start-up. */
export function inThreadHashers(store: EventStore): LeafHashers {
  return { hash: (run) => hashRun(store, run), close: async () => {} };
}

interface Answer {
  id: number;
  run?: HashedRun;
  error?: string;
}

/**
 * Worker threads, each with its own connection to the PostgreSQL database at `databaseUrl`, reading
 * and hashing runs side by side: reading rows and hashing leaves is most of a check's work, and
 * runs of the log are independent of each other.
 */
export function threadHashers(databaseUrl: string, threads = availableParallelism()): LeafHashers {
  const workers = Array.from({ length: Math.max(1, threads) }, () =>
    transparencyThread("leaf-thread", { databaseUrl }),
  );
  const waiting = new Map<number, { resolve(run: HashedRun): void; reject(error: Error): void }>();
  let failed: Error | undefined;
  for (const worker of workers) {
    worker.on("message", ({ id, run, error }: Answer) => {
      const asked = waiting.get(id);
      waiting.delete(id);
      if (run) asked?.resolve(run);
      else asked?.reject(new Error(error ?? "the leaf thread failed"));
    });
    // A thread that died answers nothing more: what waits on it and what is asked later fails.
    worker.on("error", (error) => {
      failed ??= error;
      for (const asked of waiting.values()) asked.reject(error);
      waiting.clear();
    });
  }
  let asked = 0;
  return {
    hash(run) {
      if (failed) return Promise.reject(failed);
      const id = asked++;
      const worker = workers[id % workers.length] as Worker;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        worker.postMessage({ id, run });
      });
    },
    async close() {
      await Promise.all(workers.map((worker) => worker.terminate()));
    },
  };
}
