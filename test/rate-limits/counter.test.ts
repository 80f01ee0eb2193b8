import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryCounter } from "../../src/rate-limits/memory.js";
import { REDIS_KEY_PREFIX, RedisCounter, redisKey } from "../../src/rate-limits/redis.js";
import { counterContract } from "./counter.contract.js";

const MINUTE = 60_000;
const redisUrl = process.env.TEST_REDIS_URL || null;
const redisSkipReason = redisUrl ? "" : "no Redis: set TEST_REDIS_URL (e.g. redis://127.0.0.1:6379)";
if (!redisUrl) console.warn(`[handoff tests] Redis suites skipped: ${redisSkipReason}`);

counterContract("rate-limit counter contract in memory", async () => new MemoryCounter());

counterContract(
  "rate-limit counter contract on Redis",
  redisUrl ? () => RedisCounter.connect(redisUrl) : null,
  redisSkipReason,
);

describe("MemoryCounter keeps memory bounded", () => {
  it("drops a window's counts once the clock has passed the window after it", async () => {
    const counter = new MemoryCounter();
    const w = 100 * MINUTE;
    for (let i = 0; i < 100; i++) await counter.hit(`key-${i}`, w, MINUTE);
    expect(counter.size).toBe(100);

    // The next window: the previous one is kept for hits that read the clock just before the boundary.
    expect(await counter.hit("key-0", w + MINUTE, MINUTE)).toBe(1);
    expect(counter.size).toBe(101);
    expect(await counter.hit("key-1", w, MINUTE)).toBe(2);

    // Two windows on, the first window is gone.
    expect(await counter.hit("key-0", w + 2 * MINUTE, MINUTE)).toBe(1);
    expect(counter.size).toBe(2);

    // A long jump (the test clock) leaves only the new window.
    expect(await counter.hit("key-9", w + 1000 * MINUTE, MINUTE)).toBe(1);
    expect(counter.size).toBe(1);
    await counter.close();
    expect(counter.size).toBe(0);
  });
});

describe("RedisCounter start-up", () => {
  it("fails with a clear message when Redis cannot be reached", async () => {
    await expect(RedisCounter.connect("redis://127.0.0.1:1")).rejects.toThrow(
      /cannot reach Redis \(REDIS_URL\)/,
    );
  });
});

describe.skipIf(!redisUrl)(
  redisUrl ? "RedisCounter keys" : `RedisCounter keys (skipped: ${redisSkipReason})`,
  () => {
    let counter: RedisCounter;
    let redis: Redis;
    beforeAll(async () => {
      counter = await RedisCounter.connect(redisUrl as string);
      redis = new Redis(redisUrl as string);
    });
    afterAll(async () => {
      await counter?.close();
      await redis?.quit();
    });

    it("keeps a count under handoff:rl:<bucket>:<window start> that expires on its own", async () => {
      const bucket = `keys-${randomUUID()}:transfers.download`;
      const windowStart = 1_000 * MINUTE;
      await counter.hit(bucket, windowStart, MINUTE);
      await counter.hit(bucket, windowStart, MINUTE);
      const key = redisKey(bucket, windowStart);
      expect(key).toBe(`${REDIS_KEY_PREFIX}${bucket}:${windowStart}`);
      expect(key.startsWith("handoff:rl:")).toBe(true);
      expect(await redis.get(key)).toBe("2");
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(MINUTE);
      expect(ttl).toBeLessThanOrEqual(2 * MINUTE);
    });

    it("close() is safe to call twice", async () => {
      const other = await RedisCounter.connect(redisUrl as string);
      await other.close();
      await other.close();
    });
  },
);
