import type { RateLimitCounter } from "./counter.js";
import { MemoryCounter } from "./memory.js";
import type { RedisCounter } from "./redis.js";

/**
 * After a command to a connected Redis failed (it answered nothing in time), counts stay in this
 * process this long before Redis is tried again: one request pays the time-out, not every one.
 */
const PAUSE_AFTER_FAILURE_MS = 5000;

/**
 * The rate-limit counts of a server with REDIS_URL: in Redis while it answers, shared by every
 * instance; while it is away (or not up yet at start-up), in this process's memory, at no cost per
 * request, and back in Redis as soon as its client has reconnected. Limits are looser meanwhile:
 * each instance counts alone, so N instances let up to N times a limit through, and the counts of
 * the window in progress start again from what the other store holds at each switch.
 */
export class FallbackCounter implements RateLimitCounter {
  private readonly local = new MemoryCounter();
  private pausedUntil = 0;
  private wasShared = true;

  constructor(
    private readonly shared: RedisCounter,
    private readonly onSwitch: (message: string) => void = () => {},
    private readonly nowMs: () => number = Date.now,
  ) {}

  hit(bucket: string, windowStart: number, windowMs: number): Promise<number> {
    return this.inEither((counter) => counter.hit(bucket, windowStart, windowMs));
  }

  count(bucket: string, windowStart: number, windowMs: number): Promise<number> {
    return this.inEither((counter) => counter.count(bucket, windowStart, windowMs));
  }

  /** Why counts are kept per process right now, or null while they are in Redis. */
  degraded(): string | null {
    return this.usesShared() ? null : "Redis does not answer: rate limits are counted per process";
  }

  async close(): Promise<void> {
    await Promise.all([this.shared.close(), this.local.close()]);
  }

  private usesShared(): boolean {
    return this.shared.ready && this.nowMs() >= this.pausedUntil;
  }

  private async inEither(operation: (counter: RateLimitCounter) => Promise<number>): Promise<number> {
    if (this.usesShared()) {
      try {
        const count = await operation(this.shared);
        this.switched(true);
        return count;
      } catch {
        this.pausedUntil = this.nowMs() + PAUSE_AFTER_FAILURE_MS;
      }
    }
    this.switched(false);
    return operation(this.local);
  }

  private switched(shared: boolean): void {
    if (shared === this.wasShared) return;
    this.wasShared = shared;
    this.onSwitch(
      shared
        ? "rate limits: Redis answers again, counting there"
        : `rate limits: ${this.degraded() ?? "Redis failed"}`,
    );
  }
}
