import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN } from "../support/app.js";
import { freshPostgres, postgresServer, tempDir, titled } from "../support/databases.js";
import { ServerProcess } from "../support/server-process.js";
import {
  accountWithAgents,
  call,
  isCut,
  Load,
  lostOrChanged,
  PrivateRedis,
  redisSkipReason,
  sleep,
} from "./support.js";

const skipReason = redisSkipReason();

/** /readyz's body once `accept` holds for it, or the last one after `ms`. */
async function readiness(baseUrl: string, accept: (body: Record<string, unknown>) => boolean, ms = 20_000) {
  let last: unknown = null;
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(200)) {
    const ready = await call(baseUrl, "GET", "/readyz", "");
    last = isCut(ready) ? ready : ready.status === 200 ? ready.body : { status: ready.status, ...ready.body };
    if (!isCut(ready) && ready.status === 200 && accept(ready.body)) break;
  }
  return last;
}

const degraded = (body: Record<string, unknown>) => Array.isArray(body.degraded);
const whole = (body: Record<string, unknown>) => !("degraded" in body);
const DEGRADED = { status: "ready", degraded: [expect.objectContaining({ path: "rate_limits" })] };

/**
 * Issue 20, point 5: Redis (REDIS_URL) is optional at run time. A server starts while it is
 * down, counts rate limits per process meanwhile at no cost per request, and goes back to Redis
 * when it returns; killed and restarted under load, no request fails; /readyz shows the state.
 */
describe.skipIf(skipReason !== "")(titled("Redis away", skipReason), () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it("starts without it, falls back per process, returns to it, and loses nothing under load", async () => {
    const redis = await PrivateRedis.create();
    cleanups.push(() => redis.kill());
    const dir = tempDir("handoff-faults-redis-");
    cleanups.push(() => dir.remove());
    const database = postgresServer ? await freshPostgres(postgresServer) : null;
    if (database) cleanups.push(() => database.drop());
    const server = await ServerProcess.start(
      {
        REDIS_URL: redis.url,
        DATA_DIR: dir.path,
        ADMIN_TOKEN,
        ...(database ? { DATABASE_URL: database.url } : {}),
      },
      { readyTimeoutMs: 300_000 },
    );
    cleanups.push(() => server.kill("SIGTERM"));
    expect(await readiness(server.baseUrl, degraded)).toMatchObject(DEGRADED);

    // Limited per process meanwhile, without waiting on Redis: ten requests take nowhere near ten
    // client time-outs (1 s each).
    const apiKey = await accountWithAgents(server.baseUrl);
    const started = Date.now();
    for (let i = 0; i < 10; i++) {
      const listed = await call(server.baseUrl, "GET", "/v1/transfers", apiKey);
      expect(isCut(listed) ? listed.cut : listed.status).toBe(200);
      if (!isCut(listed)) expect(listed.headers.get("x-ratelimit-remaining")).toBe(String(120 - 1 - i));
    }
    expect(Date.now() - started).toBeLessThan(5000);

    await redis.start();
    expect(await readiness(server.baseUrl, whole)).toEqual({ status: "ready" });
    const probe = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    probe.on("error", () => {});
    cleanups.push(() => probe.disconnect());
    await call(server.baseUrl, "GET", "/v1/transfers", apiKey);
    expect((await probe.keys("handoff:rl:*")).length, "counts are in Redis again").toBeGreaterThan(0);

    const load = new Load(server.baseUrl, [apiKey]);
    try {
      await sleep(1500);
      await redis.kill();
      expect(await readiness(server.baseUrl, degraded)).toMatchObject(DEGRADED);
      await sleep(2000);
      await redis.start();
      expect(await readiness(server.baseUrl, whole)).toMatchObject({ status: "ready" });
      await sleep(1500);
    } finally {
      await load.finish();
    }
    expect(load.unexpected(() => false)).toEqual([]);
    expect(load.acknowledged.length).toBeGreaterThan(0);
    await call(server.baseUrl, "GET", "/v1/transfers", apiKey);
    expect((await probe.keys("handoff:rl:*")).length, "back in the restarted Redis").toBeGreaterThan(0);
    expect(await lostOrChanged(server.baseUrl, load.acknowledged)).toEqual([]);
  }, 400_000);
});
