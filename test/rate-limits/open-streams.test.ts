import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import {
  FallbackStreamSlots,
  MemoryStreamSlots,
  RedisStreamSlots,
  STREAM_STALE_MS,
} from "../../src/rate-limits/open-streams.js";

const redisUrl = process.env.TEST_REDIS_URL || null;
const redisSkipReason = redisUrl ? "" : "no Redis: set TEST_REDIS_URL (e.g. redis://127.0.0.1:6379)";

async function ready(slots: RedisStreamSlots): Promise<RedisStreamSlots> {
  for (let i = 0; i < 100 && !slots.ready; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  return slots;
}

describe("open event streams in one process", () => {
  it("admits up to the limit per holder, and one more once a stream is released", async () => {
    const slots = new MemoryStreamSlots();
    expect(await slots.take("key-a", "s1", 2)).toBe(true);
    expect(await slots.take("key-a", "s2", 2)).toBe(true);
    expect(await slots.take("key-a", "s3", 2)).toBe(false);
    expect(await slots.take("key-b", "s4", 2)).toBe(true);
    await slots.release("key-a", "s1");
    expect(await slots.take("key-a", "s3", 2)).toBe(true);
  });

  it("falls back to this process while Redis does not answer", async () => {
    const slots = new FallbackStreamSlots(RedisStreamSlots.open("redis://127.0.0.1:1"));
    expect(await slots.take("key-a", "s1", 1)).toBe(true);
    expect(await slots.take("key-a", "s2", 1)).toBe(false);
    await slots.release("key-a", "s1");
    expect(await slots.take("key-a", "s2", 1)).toBe(true);
    await slots.close();
  });
});

describe.skipIf(!redisUrl)(
  redisUrl
    ? "open event streams shared through Redis"
    : `open event streams shared through Redis (skipped: ${redisSkipReason})`,
  () => {
    const opened: RedisStreamSlots[] = [];
    const instance = async () => {
      const slots = await ready(RedisStreamSlots.open(redisUrl as string));
      opened.push(slots);
      return slots;
    };
    afterAll(async () => {
      for (const slots of opened) await slots.close();
    });

    it("two instances share one holder's cap, and a release on one frees a slot for the other", async () => {
      const holder = `holder-${randomUUID()}`;
      const [first, second] = [await instance(), await instance()];
      expect(await first.take(holder, "a", 3)).toBe(true);
      expect(await second.take(holder, "b", 3)).toBe(true);
      expect(await first.take(holder, "c", 3)).toBe(true);
      expect(await second.take(holder, "d", 3)).toBe(false);
      await first.release(holder, "a");
      expect(await second.take(holder, "d", 3)).toBe(true);
    });

    it("the streams of an instance that stopped renewing them free their slots once stale", async () => {
      const holder = `holder-${randomUUID()}`;
      const slots = await instance();
      expect(await slots.take(holder, "alive", 2)).toBe(true);
      // A stream of a killed instance: its last heartbeat long ago.
      const redis = new Redis(redisUrl as string);
      await redis.zadd(`handoff:streams:${holder}`, Date.now() - STREAM_STALE_MS - 1000, "killed");
      await redis.quit();
      expect(await slots.take(holder, "new", 2)).toBe(true);
      expect(await slots.take(holder, "one too many", 2)).toBe(false);
    });
  },
);
