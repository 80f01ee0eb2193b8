import type { Redis } from "ioredis";
import { closeRedis, openRedis } from "./redis.js";

/**
 * The open event streams of each credential (OPEN_EVENT_STREAMS): a stream takes a slot when it
 * opens, unless its holder has `limit` open already, and gives it back when it ends.
 */
export interface OpenStreamSlots {
  take(holder: string, stream: string, limit: number): Promise<boolean>;
  release(holder: string, stream: string): Promise<void>;
  close(): Promise<void>;
}

/** Slots in this process: right for one instance, and the fallback while Redis is away. */
export class MemoryStreamSlots implements OpenStreamSlots {
  private readonly open = new Map<string, Set<string>>();

  async take(holder: string, stream: string, limit: number): Promise<boolean> {
    const streams = this.open.get(holder) ?? new Set<string>();
    if (streams.size >= limit) return false;
    streams.add(stream);
    this.open.set(holder, streams);
    return true;
  }

  async release(holder: string, stream: string): Promise<void> {
    const streams = this.open.get(holder);
    streams?.delete(stream);
    if (streams?.size === 0) this.open.delete(holder);
  }

  async close(): Promise<void> {
    this.open.clear();
  }
}

const KEY_PREFIX = "handoff:streams:";
/** How often an instance tells Redis its streams are still open. */
export const STREAM_HEARTBEAT_MS = 10_000;
/** A stream not heard of for this long is gone with its instance (killed, cut off): its slot frees itself. */
export const STREAM_STALE_MS = 3 * STREAM_HEARTBEAT_MS;

/** Redis's own clock in ms, so the instances' clocks need not agree. */
const NOW =
  "local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)";

/** KEYS[1] the holder's set; ARGV: stream id, limit, stale ms. Answers 1 when the stream got its slot. */
const TAKE = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[3]))
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`;

/** KEYS: holders' sets; ARGV: one stream id per key, then the stale ms. Only streams still there. */
const HEARTBEAT = `${NOW}
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, 'XX', now, ARGV[i])
  redis.call('PEXPIRE', key, ARGV[#KEYS + 1])
end
return 0`;

/**
 * Slots in Redis, shared by every instance (REDIS_URL): per holder a sorted set of stream ids
 * scored by when their instance last said they were open. Each instance renews its own streams
 * every STREAM_HEARTBEAT_MS; a stream whose instance died is not renewed, and taking a slot first
 * drops those older than STREAM_STALE_MS, so a killed instance's streams free their slots within
 * that time. Taking is one script: two instances racing for the last slot cannot both get it.
 */
export class RedisStreamSlots implements OpenStreamSlots {
  /** This instance's streams in Redis, stream id → holder, renewed by the heartbeat. */
  private readonly mine = new Map<string, string>();
  private readonly heartbeat: NodeJS.Timeout;

  constructor(private readonly redis: Redis) {
    this.heartbeat = setInterval(() => void this.renew().catch(() => {}), STREAM_HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  static open(url: string): RedisStreamSlots {
    return new RedisStreamSlots(openRedis(url));
  }

  get ready(): boolean {
    return this.redis.status === "ready";
  }

  async take(holder: string, stream: string, limit: number): Promise<boolean> {
    const taken = await this.redis.eval(TAKE, 1, KEY_PREFIX + holder, stream, limit, STREAM_STALE_MS);
    if (taken !== 1) return false;
    this.mine.set(stream, holder);
    return true;
  }

  async release(holder: string, stream: string): Promise<void> {
    this.mine.delete(stream);
    await this.redis.zrem(KEY_PREFIX + holder, stream);
  }

  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    await closeRedis(this.redis);
  }

  private async renew(): Promise<void> {
    if (this.mine.size === 0) return;
    const streams = [...this.mine];
    await this.redis.eval(
      HEARTBEAT,
      streams.length,
      ...streams.map(([, holder]) => KEY_PREFIX + holder),
      ...streams.map(([stream]) => stream),
      STREAM_STALE_MS,
    );
  }
}

/**
 * The slots of a server with REDIS_URL: in Redis while it answers, shared by every instance;
 * while it is away, in this process, as the rate limits fall back (src/rate-limits/fallback.ts):
 * each instance then counts its own streams, so N instances let up to N times the cap through.
 * A stream gives its slot back where it took it.
 */
export class FallbackStreamSlots implements OpenStreamSlots {
  private readonly local = new MemoryStreamSlots();
  /** The streams whose slot is in this process. */
  private readonly localStreams = new Set<string>();

  constructor(private readonly shared: RedisStreamSlots) {}

  async take(holder: string, stream: string, limit: number): Promise<boolean> {
    if (this.shared.ready) {
      try {
        return await this.shared.take(holder, stream, limit);
      } catch {
        // Redis stopped answering: this stream counts here.
      }
    }
    const taken = await this.local.take(holder, stream, limit);
    if (taken) this.localStreams.add(stream);
    return taken;
  }

  async release(holder: string, stream: string): Promise<void> {
    if (this.localStreams.delete(stream)) return this.local.release(holder, stream);
    // A slot Redis cannot give back now goes stale there on its own.
    await this.shared.release(holder, stream).catch(() => {});
  }

  async close(): Promise<void> {
    await Promise.all([this.shared.close(), this.local.close()]);
  }
}
