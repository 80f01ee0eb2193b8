/**
 * Counts requests in fixed windows. The caller names the window by its start, taken from the
 * service's clock, so windows follow that clock (and the test clock) rather than the store's.
 */
export interface RateLimitCounter {
  /**
   * Records one hit on `bucket` in the window `[windowStart, windowStart + windowMs)` and returns
   * the number of hits in that window including this one. Concurrent hits each get a distinct count.
   */
  hit(bucket: string, windowStart: number, windowMs: number): Promise<number>;
  /** The hits on `bucket` in that window so far, recording none (0 when there are none). */
  count(bucket: string, windowStart: number, windowMs: number): Promise<number>;
  close(): Promise<void>;
  /** Why the counts are less exact than configured right now (Redis away), or null; absent: never. */
  degraded?(): string | null;
}

/**
 * How long a window's count is kept after the window starts: its own length plus one more, so a
 * request that read the clock just before a boundary still counts in its window, and clocks of
 * several instances may differ a little. Both counters keep counts this long and no longer.
 */
export const retentionMs = (windowMs: number): number => 2 * windowMs;
