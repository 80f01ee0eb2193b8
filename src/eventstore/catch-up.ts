import type { Position, RecordedEvent, SubscribeOptions, Subscription } from "./port.js";

/**
 * Wakes sleepers when this process appends, so local subscribers react at once instead of
 * waiting for their next poll. Appends by other processes are found by the poll.
 */
export class AppendSignal {
  private waiters = new Set<() => void>();

  notify(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake();
  }

  /** Resolves on the next notify, or after `ms`, whichever comes first. */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.waiters.add(wake);
    });
  }
}

/** How often an idle subscription looks for appends made by other processes. */
export const DEFAULT_IDLE_POLL_MS = 250;
const ERROR_PAUSE_MS = 1000;

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
    while (running) {
      try {
        const batch = await readAll(position, batchSize);
        if (!running) break;
        if (batch.length === 0) {
          await signal.wait(idlePollMs);
          continue;
        }
        await options.handle(batch);
        position = batch[batch.length - 1]?.position ?? position;
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
