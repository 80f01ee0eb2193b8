import { isAfter, type LogPage, type Position, type SubscribeOptions, type Subscription } from "./port.js";

/**
 * Wakes sleepers when this process appends (or, on PostgreSQL, hears of another's), so
 * subscribers react at once instead of waiting for their next poll. Each notice moves a
 * generation, so a subscriber busy with a batch when an append is announced still learns of it.
 *
 * An append announced with its position tells a subscriber whether it has read it already: under
 * load, appends committed while a batch was being read or applied are mostly in that batch, and
 * reading again for each of their notices found nothing most of the time (on PostgreSQL, about
 * three empty reads for every batch with 32 concurrent clients).
 */
export class AppendSignal {
  private waiters = new Set<() => void>();
  /** How many appends were announced so far. */
  generation = 0;
  /** The newest position announced; null until one is. */
  newest: Position | null = null;
  /** How many appends were announced without a position (another process's, heard through LISTEN). */
  unplaced = 0;

  notify(position?: Position): void {
    if (position === undefined) this.unplaced++;
    else if (isAfter(position, this.newest)) this.newest = position;
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
 * transaction still open anywhere, which may be another writer's (a projection batch's, too). A few
 * quick re-reads then find them, instead of sleeping a whole idle poll.
 */
const EAGER_REREADS = 8;
/**
 * Woken again within this long of its last read, a subscription waits out the rest before reading:
 * under load every request's append wakes it, and one read for the appends of a few milliseconds
 * costs less than one read (most of them empty, while the others' transactions are still open)
 * for each. Also the pause between quick re-reads.
 */
const BUSY_READ_INTERVAL_MS = 4;

/**
 * A catch-up subscription built on reads of the global log (`read`: up to `limit` events after
 * `from`, of `types` when given): reads batch after batch, then waits for more.
 */
export function pollingSubscription(
  read: (from: Position | null, limit: number, types?: readonly string[]) => Promise<LogPage>,
  signal: AppendSignal,
  options: SubscribeOptions,
  idlePollMs = DEFAULT_IDLE_POLL_MS,
): Subscription {
  let running = true;
  let position = options.from;
  const batchSize = options.batchSize ?? 500;
  const { readIntervalMs = BUSY_READ_INTERVAL_MS } = options;
  const readInterval = typeof readIntervalMs === "function" ? readIntervalMs : () => readIntervalMs;
  /** Ends the wait between reads now under way (`hurry`). */
  let endWait: (() => void) | null = null;
  /** Waits until the read interval has passed since the last read, or until hurried. */
  const paced = async (lastRead: number) => {
    const early = lastRead + readInterval() - Date.now();
    if (early <= 0) return;
    await new Promise<void>((resolve) => {
      const end = () => {
        clearTimeout(timer);
        endWait = null;
        resolve();
      };
      const timer = setTimeout(end, early);
      endWait = end;
    });
  };
  /** A newer position than this subscription's was announced: an append it has not read. */
  const behind = () => signal.newest !== null && isAfter(signal.newest, position);

  const loop = async () => {
    let eager = 0;
    /** The last wake-up was for an append without a position: whether it was read is unknown. */
    let blind = false;
    let lastRead = 0;
    while (running) {
      try {
        // Appends announced from here on may be missing from this read.
        let announced = signal.generation;
        const unplacedBefore = signal.unplaced;
        lastRead = Date.now();
        const page = await read(position, batchSize, options.types);
        if (!running) break;
        if (page.scanned > 0 && page.last !== null) {
          if (page.events.length > 0) await options.handle(page.events);
          await options.read?.(page.last, page.scanned);
          position = page.last;
          // A full batch means more is waiting; otherwise read again only once told of an append.
          if (page.scanned === batchSize) continue;
        } else if (eager > 0 && (blind || behind())) {
          eager--;
          await paced(lastRead);
          continue;
        }
        eager = 0;
        // Sleeps until told of an append this subscription may not have read, or the idle poll is due.
        while (running && (await signal.wait(idlePollMs, announced))) {
          if (!running) break;
          blind = signal.unplaced > unplacedBefore;
          if (blind || behind()) {
            eager = EAGER_REREADS;
            await paced(lastRead);
            break;
          }
          announced = signal.generation;
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
      endWait?.();
      await done;
    },
    hurry() {
      endWait?.();
    },
  };
}
