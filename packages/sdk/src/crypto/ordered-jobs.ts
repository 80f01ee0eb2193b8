/**
 * Keeps a few record jobs running at once and hands their results on strictly in order.
 * WebCrypto does its work off the main thread, so while one record is sealed or opened the next
 * can be cut and started: about twice the throughput of one record at a time. `add` waits while
 * `depth` jobs are already running, which is what carries back-pressure to the stream.
 * A failed job fails the stream at its place in the order; results after it are never handed on.
 */
export class OrderedJobs<T> {
  private readonly running: Promise<Settled<T>>[] = [];

  constructor(
    private readonly depth: number,
    private readonly onResult: (result: T) => void,
  ) {}

  async add(job: Promise<T>): Promise<void> {
    this.running.push(settle(job));
    while (this.running.length > this.depth) await this.handOnOldest();
  }

  async drain(): Promise<void> {
    while (this.running.length > 0) await this.handOnOldest();
  }

  private async handOnOldest(): Promise<void> {
    const settled = await (this.running.shift() as Promise<Settled<T>>);
    if (!settled.ok) throw settled.error;
    this.onResult(settled.value);
  }
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

// Settled at once, so a job failing while older ones still run is never an unhandled rejection.
function settle<T>(job: Promise<T>): Promise<Settled<T>> {
  return job.then(
    (value) => ({ ok: true, value }),
    (error: unknown) => ({ ok: false, error }),
  );
}

/** Jobs in flight for a record size: up to 4, and no more than about 4 MiB of records. */
export function jobDepth(recordSize: number): number {
  return Math.max(1, Math.min(4, Math.floor((4 * 1024 * 1024) / recordSize)));
}
