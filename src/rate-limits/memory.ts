import { type RateLimitCounter, retentionMs } from "./counter.js";

interface Window {
  /** The time after which nobody can still be counting in this window. */
  expiresAt: number;
  counts: Map<string, number>;
}

/**
 * Counters in this process's memory: right for one instance. Memory stays bounded: a window's
 * counts are dropped once a hit shows the service clock has moved past its retention.
 */
export class MemoryCounter implements RateLimitCounter {
  private readonly windows = new Map<string, Window>();
  /** The latest window start seen: the service clock as far as this counter knows it. */
  private latest = Number.NEGATIVE_INFINITY;

  async hit(bucket: string, windowStart: number, windowMs: number): Promise<number> {
    if (windowStart > this.latest) {
      this.latest = windowStart;
      this.expire();
    }
    const id = `${windowStart}/${windowMs}`;
    let window = this.windows.get(id);
    if (!window) {
      window = { expiresAt: windowStart + retentionMs(windowMs), counts: new Map() };
      this.windows.set(id, window);
    }
    const count = (window.counts.get(bucket) ?? 0) + 1;
    window.counts.set(bucket, count);
    return count;
  }

  async count(bucket: string, windowStart: number, windowMs: number): Promise<number> {
    return this.windows.get(`${windowStart}/${windowMs}`)?.counts.get(bucket) ?? 0;
  }

  /** How many (bucket, window) counts are held; for tests of the memory bound. */
  get size(): number {
    let total = 0;
    for (const window of this.windows.values()) total += window.counts.size;
    return total;
  }

  async close(): Promise<void> {
    this.windows.clear();
  }

  private expire(): void {
    for (const [id, window] of this.windows) {
      if (window.expiresAt <= this.latest) this.windows.delete(id);
    }
  }
}
