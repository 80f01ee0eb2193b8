import type { Position, RecordedEvent, SubscribeOptions, Subscription } from "./port.js";

/**
 * Wakes sleepers when this process appends (or, on PostgreSQL, hears of another's), so
 * subscribers react at once instead of waiting for their next poll. Each notice moves a
 * generation, so a subscriber busy with a batch when an append is announced still learns of it.
 */
export class AppendSignal {
  private waiters = new Set<() => void>();
  /** How many appends were announced so far. */
  generation = 0;

  notify(): void {
    this.generation++;
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake();
  }

  /**
   * Resolves true on the next notify (at once when one came after generation `since`), or false
   * after `ms`, whichever comes first.
   */
  wait(ms: number, since = this.generation): Promise<boolean> {
    if (this.generation > since) return Promise.resolve(true);
    return new Promise((resolve) => {
      const wake = (woken: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(onNotify);
        resolve(woken);
      };
      const onNotify = () => wake(true);
      const timer = setTimeout(() => wake(false), ms);
      this.waiters.add(onNotify);
    });
  }
}

/** How often an idle subscription looks for appends made by other processes. */
export const DEFAULT_IDLE_POLL_MS = 250;
const ERROR_PAUSE_MS = 1000;
/**
 * A wake-up can come before its events are readable: on PostgreSQL a reader stays below the oldest
 * transaction still open anywhere, which may be another writer's. A few quick re-reads then find
 * them, instead of sleeping a whole idle poll.
 */
const EAGER_REREADS = 8;
const EAGER_REREAD_MS = 3;
/**
 * Woken again within this long of its last read, a subscription waits out the rest before reading:
 * under load every request's append wakes it, and one read for the appends of a few milliseconds
 * costs less than one read (most of them empty, while the others' transactions are still open)
 * for each.
 */
const BUSY_READ_INTERVAL_MS = 4;

/** A catch-up subscription built on `readAll`: reads batch after batch, then waits for more. */
export function pollingSubscription(
  readAll: (from: Position | null, limit: number) => Promise<RecordedEvent[]>,
  signal: AppendSignal,
  options: SubscribeOptions,
  idlePollMs = DEFAULT_IDLE_POLL_MS,
): Subscription {
  let running = true;
  let position = options.from;
  const batchSize = options.batchSize ?? 500;

  const loop = async () => {
    let eager = 0;
    let lastRead = 0;
    while (running) {
      try {
        // Appends announced from here on may be missing from this read.
        const announced = signal.generation;
        lastRead = Date.now();
        const batch = await readAll(position, batchSize);
        if (!running) break;
        if (batch.length > 0) {
          eager = 0;
          await options.handle(batch);
          position = batch[batch.length - 1]?.position ?? position;
          // A full batch means more is waiting; otherwise read again only once told of an append.
          if (batch.length === batchSize) continue;
        } else if (eager > 0) {
          eager--;
          await new Promise((resolve) => setTimeout(resolve, EAGER_REREAD_MS));
          continue;
        }
        if (await signal.wait(idlePollMs, announced)) {
          eager = EAGER_REREADS;
          const early = lastRead + BUSY_READ_INTERVAL_MS - Date.now();
          if (early > 0) await new Promise((resolve) => setTimeout(resolve, early));
        }
      } catch (error) {
        if (!running) break;
        options.onError?.(error);
        if (!running) break;
        await signal.wait(ERROR_PAUSE_MS);
      }
    }
  };
  const done = loop();

  return {
    async stop() {
      running = false;
      signal.notify();
      await done;
    },
  };
}
