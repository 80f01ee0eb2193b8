import { Redis } from "ioredis";
import { type RateLimitCounter, retentionMs } from "./counter.js";

export const REDIS_KEY_PREFIX = "handoff:rl:";

/** A hit that cannot reach Redis fails after this long instead of holding the request. */
const COMMAND_TIMEOUT_MS = 1000;

const CLIENT_OPTIONS = {
  // While Redis is away a hit fails within about a second rather than waiting for it.
  maxRetriesPerRequest: 1,
  commandTimeout: COMMAND_TIMEOUT_MS,
};

/** The key of one bucket's count in one window; the window start is the service clock's, not Redis's. */
export const redisKey = (bucket: string, windowStart: number): string =>
  `${REDIS_KEY_PREFIX}${bucket}:${windowStart}`;

/**
 * A client that starts connecting and returns at once, reconnecting on its own whenever Redis goes
 * away. Until it is ready, commands fail at once rather than queueing: the caller counts elsewhere
 * meanwhile (FallbackCounter, FallbackStreamSlots).
 */
export function openRedis(url: string): Redis {
  const redis = new Redis(url, { ...CLIENT_OPTIONS, enableOfflineQueue: false });
  // ioredis reports connection trouble as events too; the failing command carries it to the caller.
  redis.on("error", () => {});
  return redis;
}

/**
 * Counters in Redis, shared by every instance of the service (`REDIS_URL`). Each hit is one
 * MULTI of INCR and PEXPIRE, so concurrent hits from any number of instances are counted exactly
 * and every key expires on its own.
 */
export class RedisCounter implements RateLimitCounter {
  private constructor(private readonly redis: Redis) {
    redis.on("error", () => {});
  }

  /** Starts connecting and returns at once (openRedis). */
  static open(url: string): RedisCounter {
    return new RedisCounter(openRedis(url));
  }

  /** Connects and checks the server answers, so a wrong URL fails at once, not at first use. */
  static async connect(url: string): Promise<RedisCounter> {
    const redis = new Redis(url, { ...CLIENT_OPTIONS, lazyConnect: true });
    const counter = new RedisCounter(redis);
    try {
      await redis.connect();
      await redis.ping();
    } catch (error) {
      redis.disconnect();
      throw new Error(
        `cannot reach Redis (REDIS_URL): ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    return counter;
  }

  /** Connected and answering commands (as far as the client knows). */
  get ready(): boolean {
    return this.redis.status === "ready";
  }

  async hit(bucket: string, windowStart: number, windowMs: number): Promise<number> {
    const key = redisKey(bucket, windowStart);
    const replies = await this.redis.multi().incr(key).pexpire(key, retentionMs(windowMs)).exec();
    const [incr] = replies ?? [];
    if (!incr) throw new Error(`rate-limit counter ${key}: the transaction was aborted`);
    const [error, count] = incr;
    if (error) throw error;
    if (typeof count !== "number") throw new Error(`rate-limit counter ${key}: INCR answered ${count}`);
    return count;
  }

  async count(bucket: string, windowStart: number, _windowMs: number): Promise<number> {
    const value = await this.redis.get(redisKey(bucket, windowStart));
    return value === null ? 0 : Number(value);
  }

  close(): Promise<void> {
    return closeRedis(this.redis);
  }
}

/** Says goodbye to Redis if it answers, else drops the connection. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === "end") return;
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
