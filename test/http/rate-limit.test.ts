import { randomUUID } from "node:crypto";
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from "fastify";
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from "fastify-type-provider-zod";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { AdjustableClock, type Clock } from "../../src/clock.js";
import { notFound, sendError, sendNotFound, unauthorized } from "../../src/http/errors.js";
import { hasRateLimits, registerRateLimits } from "../../src/http/rate-limit.js";
import type { RateLimitCounter } from "../../src/rate-limits/counter.js";
import { MemoryCounter } from "../../src/rate-limits/memory.js";
import {
  DEFAULT_RATE_LIMIT,
  RATE_LIMIT_ROWS,
  RATE_LIMIT_WINDOW_MS,
  rateLimitRule,
} from "../../src/rate-limits/policy.js";
import { RedisCounter } from "../../src/rate-limits/redis.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { expectError } from "./helpers.js";

const MINUTE = RATE_LIMIT_WINDOW_MS;
const redisUrl = process.env.TEST_REDIS_URL || null;
const redisSkipReason = redisUrl ? "" : "no Redis: set TEST_REDIS_URL (e.g. redis://127.0.0.1:6379)";

/** Moves the clock to one second into a fresh window, so no test straddles a window boundary. */
function startOfWindow(clock: AdjustableClock): { start: number; end: number } {
  const now = clock.now().getTime();
  const start = Math.floor(now / MINUTE) * MINUTE + MINUTE;
  clock.advance((start + 1000 - now) / 1000);
  return { start, end: start + MINUTE };
}

const RATE_HEADERS = ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"] as const;

function expectRateHeaders(res: LightMyRequestResponse, limit: number, remaining: number, resetMs: number) {
  expect(res.headers["x-ratelimit-limit"], res.body).toBe(String(limit));
  expect(res.headers["x-ratelimit-remaining"], res.body).toBe(String(remaining));
  expect(res.headers["x-ratelimit-reset"], res.body).toBe(String(resetMs / 1000));
}

function expectNoRateHeaders(res: LightMyRequestResponse) {
  for (const header of [...RATE_HEADERS, "retry-after"]) expect(res.headers[header]).toBeUndefined();
}

interface LimitedApp {
  app: FastifyInstance;
  /** Handler runs, by route pattern. */
  handled: Map<string, number>;
  call(
    method: string,
    url: string,
    key: string | null,
    options?: { payload?: object; deny?: boolean },
  ): Promise<LightMyRequestResponse>;
}

/**
 * A small fastify app shaped like the real one: the one error handler, an earlier onRequest hook
 * standing in for `registerAuthentication` (it sets `request.principal` from `x-test-key`, answers
 * 401 for `x-test-deny`, and makes requests without a key the admin), then the rate limits, then
 * the routes of the policy table and a few others in a plugin, as `buildApp` does.
 */
async function limitedApp(counter: RateLimitCounter, clock: Clock): Promise<LimitedApp> {
  const app = Fastify();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(sendError);
  app.setNotFoundHandler(sendNotFound);
  app.decorateRequest("principal", null as never);
  app.addHook("onRequest", async (request) => {
    if (request.headers["x-test-deny"]) throw unauthorized("invalid or revoked API key");
    const key = request.headers["x-test-key"];
    request.principal =
      typeof key === "string"
        ? { kind: "account", accountId: "account-1", credential: { kind: "api_key", keyId: key } }
        : { kind: "admin" };
  });
  registerRateLimits(app, counter, clock);

  const handled = new Map<string, number>();
  const count = (route: string) => handled.set(route, (handled.get(route) ?? 0) + 1);
  await app.register(async (plugin) => {
    const routes = plugin.withTypeProvider<ZodTypeProvider>();
    for (const row of RATE_LIMIT_ROWS) {
      routes.route({
        method: row.method,
        url: row.route,
        handler: async () => {
          count(`${row.method} ${row.route}`);
          return { ok: true };
        },
      });
    }
    for (const [method, url] of [
      ["GET", "/v1/transfers/inbox"],
      ["POST", "/v1/transfers/presigned"],
      ["GET", "/v1/agents"],
    ] as const) {
      routes.route({
        method,
        url,
        handler: async () => {
          count(`${method} ${url}`);
          return { ok: true };
        },
      });
    }
    routes.get("/v1/agents/:id", async () => {
      count("GET /v1/agents/:id");
      throw notFound("agent");
    });
    routes.post(
      "/v1/agents/register",
      { schema: { body: z.object({ agent_id: z.string().min(1) }) } },
      async (_request, reply) => {
        count("POST /v1/agents/register");
        return reply.status(201).send({ ok: true });
      },
    );
  });
  await app.ready();

  return {
    app,
    handled,
    call: (method, url, key, { payload, deny } = {}) =>
      app.inject({
        method: method as "GET",
        url,
        headers: { ...(key ? { "x-test-key": key } : {}), ...(deny ? { "x-test-deny": "1" } : {}) },
        ...(payload ? { payload } : {}),
      }),
  };
}

function rateLimitSuite(title: string, open: (() => Promise<RateLimitCounter>) | null, skipReason = "") {
  describe.skipIf(open === null)(skipReason ? `${title} (skipped: ${skipReason})` : title, () => {
    let counter: RateLimitCounter;
    let clock: AdjustableClock;
    let t: LimitedApp;
    let window: { start: number; end: number };
    beforeAll(async () => {
      counter = await (open as () => Promise<RateLimitCounter>)();
      clock = new AdjustableClock();
      t = await limitedApp(counter, clock);
    });
    afterAll(async () => {
      await t?.app.close();
      await counter?.close();
    });
    beforeEach(() => {
      window = startOfWindow(clock);
    });
    const key = () => `key-${randomUUID()}`;

    it("a success carries X-RateLimit-Limit, -Remaining and -Reset (Unix seconds of the window end)", async () => {
      const k = key();
      const first = await t.call("GET", "/v1/transfers/abc", k);
      expect(first.statusCode, first.body).toBe(200);
      expectRateHeaders(first, 120, 119, window.end);
      expect(first.headers["retry-after"]).toBeUndefined();
      expectRateHeaders(await t.call("GET", "/v1/transfers/abc", k), 120, 118, window.end);
    });

    it("error answers carry the headers too: a 404 from the handler, a 400 from validation", async () => {
      const k = key();
      const missing = await t.call("GET", "/v1/agents/nobody", k);
      expectError(missing, 404, "NOT_FOUND");
      expectRateHeaders(missing, 600, 599, window.end);

      const invalid = await t.call("POST", "/v1/agents/register", k, { payload: {} });
      expectError(invalid, 400, "VALIDATION_ERROR");
      expectRateHeaders(invalid, 600, 598, window.end);
      expect(t.handled.get("POST /v1/agents/register") ?? 0).toBe(0);
    });

    it("runs after authentication: a request refused with 401 is not counted and has no headers", async () => {
      const k = key();
      const refused = await t.call("GET", "/v1/transfers/abc/download", k, { deny: true });
      expectError(refused, 401, "UNAUTHORIZED");
      expectNoRateHeaders(refused);
      expectRateHeaders(await t.call("GET", "/v1/transfers/abc/download", k), 30, 29, window.end);
    });

    it("leaves requests without an API key (admin, connection token) alone", async () => {
      const res = await t.call("GET", "/v1/agents", null);
      expect(res.statusCode).toBe(200);
      expectNoRateHeaders(res);
    });

    it("the 31st download in a minute is 429 RATE_LIMITED with Retry-After, and its handler never runs", async () => {
      const k = key();
      const before = t.handled.get("GET /v1/transfers/:id/download") ?? 0;
      for (let i = 1; i <= 30; i++) {
        const res = await t.call("GET", `/v1/transfers/t${i}/download`, k);
        expect(res.statusCode, res.body).toBe(200);
        expectRateHeaders(res, 30, 30 - i, window.end);
      }
      const limited = await t.call("GET", "/v1/transfers/t31/download", k);
      const error = expectError(limited, 429, "RATE_LIMITED");
      expect(error.message).toMatch(/rate limit/);
      expectRateHeaders(limited, 30, 0, window.end);
      const retryAfter = Number(limited.headers["retry-after"]);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBe(Math.ceil((window.end - clock.now().getTime()) / 1000));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // Remaining never goes below 0, however far over the limit the key goes.
      expectRateHeaders(await t.call("GET", "/v1/transfers/t32/download", k), 30, 0, window.end);
      expect(t.handled.get("GET /v1/transfers/:id/download")).toBe(before + 30);

      // Another key has its own buckets.
      const other = await t.call("GET", "/v1/transfers/t1/download", key());
      expect(other.statusCode).toBe(200);
      expectRateHeaders(other, 30, 29, window.end);
      // The same key's other rows, and the default bucket, are untouched.
      expectRateHeaders(await t.call("GET", "/v1/transfers/t1", k), 120, 119, window.end);
      expectRateHeaders(await t.call("DELETE", "/v1/transfers/t1", k), 30, 29, window.end);
      expectRateHeaders(await t.call("GET", "/v1/agents", k), 600, 599, window.end);
    });

    it("HEAD counts against the GET it mirrors", async () => {
      const k = key();
      expectRateHeaders(await t.call("GET", "/v1/transfers/t/download", k), 30, 29, window.end);
      const head = await t.call("HEAD", "/v1/transfers/t/download", k);
      expect(head.statusCode).toBe(200);
      expectRateHeaders(head, 30, 28, window.end);
    });

    it("a new window resets the count; Retry-After is at least 1 second", async () => {
      const k = key();
      for (let i = 0; i < 10; i++) await t.call("POST", "/v1/accounts/a1/api-keys", k);
      // Just before the window ends the client is told to wait one (whole) second.
      clock.advance((window.end - clock.now().getTime() - 300) / 1000);
      const limited = await t.call("POST", "/v1/accounts/a1/api-keys", k);
      expectError(limited, 429, "RATE_LIMITED");
      expect(limited.headers["retry-after"]).toBe("1");

      clock.advance(1);
      const next = window.end + MINUTE;
      const again = await t.call("POST", "/v1/accounts/a1/api-keys", k);
      expect(again.statusCode, again.body).toBe(200);
      expectRateHeaders(again, 10, 9, next);
      expect(again.headers["retry-after"]).toBeUndefined();
    });

    it("every other endpoint shares one bucket of 600 a minute per key", async () => {
      const k = key();
      const others = [
        ["GET", "/v1/agents"],
        ["GET", "/v1/transfers/inbox"],
        ["POST", "/v1/transfers/presigned"],
      ] as const;
      for (let i = 1; i <= 600; i++) {
        const [method, url] = others[i % others.length] as (typeof others)[number];
        const res = await t.call(method, url, k);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.headers["x-ratelimit-remaining"]).toBe(String(600 - i));
      }
      const before = t.handled.get("GET /v1/agents/:id") ?? 0;
      const limited = await t.call("GET", "/v1/agents/someone", k);
      expectError(limited, 429, "RATE_LIMITED");
      expectRateHeaders(limited, 600, 0, window.end);
      expect(t.handled.get("GET /v1/agents/:id") ?? 0).toBe(before);
      // The table's rows have buckets of their own.
      expectRateHeaders(await t.call("GET", "/v1/transfers/x/download", k), 30, 29, window.end);
      expectRateHeaders(await t.call("POST", "/v1/transfers", k), 60, 59, window.end);
      expectRateHeaders(await t.call("GET", "/v1/transfers", k), 120, 119, window.end);
    });

    it("each row of the table has its own limit, also rows on the same path", async () => {
      const k = key();
      const paths: Record<string, string> = {
        "/v1/transfers": "/v1/transfers",
        "/v1/transfers/:id": "/v1/transfers/t1",
        "/v1/transfers/:id/download": "/v1/transfers/t1/download",
        "/v1/accounts/:account_id/api-keys": "/v1/accounts/a1/api-keys",
        "/v1/accounts/:account_id/api-keys/:key_id": "/v1/accounts/a1/api-keys/k1",
      };
      for (const row of RATE_LIMIT_ROWS) {
        const res = await t.call(row.method, paths[row.route] as string, k);
        expect(res.statusCode, `${row.method} ${row.route}: ${res.body}`).toBe(200);
        expectRateHeaders(res, row.limit, row.limit - 1, window.end);
      }
    });
  });
}

rateLimitSuite("rate limits with the memory counter", async () => new MemoryCounter());
rateLimitSuite(
  "rate limits with the Redis counter",
  redisUrl ? () => RedisCounter.connect(redisUrl) : null,
  redisSkipReason,
);

describe("rate-limit policy", () => {
  it("is the spec's table, and 600 a minute for everything else", () => {
    expect(RATE_LIMIT_ROWS.map((row) => `${row.method} ${row.route} ${row.limit}`)).toEqual([
      "POST /v1/transfers 60",
      "GET /v1/transfers 120",
      "GET /v1/transfers/:id 120",
      "GET /v1/transfers/:id/download 30",
      "DELETE /v1/transfers/:id 30",
      "POST /v1/accounts/:account_id/api-keys 10",
      "DELETE /v1/accounts/:account_id/api-keys/:key_id 10",
    ]);
    expect(DEFAULT_RATE_LIMIT.limit).toBe(600);
    expect(new Set(RATE_LIMIT_ROWS.map((row) => row.name)).size).toBe(RATE_LIMIT_ROWS.length);
  });

  it("matches route patterns whatever their parameters are called, never raw URLs", () => {
    expect(rateLimitRule("GET", "/v1/transfers/:transfer_id/download")).toEqual({
      name: "transfers.download",
      limit: 30,
    });
    expect(rateLimitRule("delete", "/v1/accounts/:id/api-keys/:id2").name).toBe("api-keys.revoke");
    expect(rateLimitRule("GET", "/v1/transfers/inbox")).toEqual(DEFAULT_RATE_LIMIT);
    expect(rateLimitRule("POST", "/v1/transfers/:id/confirm")).toEqual(DEFAULT_RATE_LIMIT);
    expect(rateLimitRule("PUT", "/v1/transfers/:id")).toEqual(DEFAULT_RATE_LIMIT);
    expect(rateLimitRule("HEAD", "/v1/transfers")).toEqual({ name: "transfers.list", limit: 120 });
  });

  it("lets requests through without the headers while the counter fails (Redis away)", async () => {
    const failing: RateLimitCounter = {
      hit: async () => {
        throw new Error("connection refused");
      },
      count: async () => {
        throw new Error("connection refused");
      },
      close: async () => {},
    };
    const t = await limitedApp(failing, new AdjustableClock());
    const res = await t.call("GET", "/v1/transfers/t1/download", "key-1");
    expect(res.statusCode, res.body).toBe(200);
    expectNoRateHeaders(res);
    expect(t.handled.get("GET /v1/transfers/:id/download")).toBe(1);
    await t.app.close();
  });

  it("cannot be registered twice on one instance", async () => {
    const app = Fastify();
    const counter = new MemoryCounter();
    registerRateLimits(app, counter, new AdjustableClock());
    expect(hasRateLimits(app)).toBe(true);
    expect(() => registerRateLimits(app, counter, new AdjustableClock())).toThrow(/already registered/);
    await app.close();
  });
});

/** The real app, as app.ts wires it, behind its real API-key authentication. */
describe("rate limits behind the real authentication", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
    expect(hasRateLimits(t.app)).toBe(true);
  });
  afterAll(async () => t?.close());

  it("counts per API key after authentication; a bad key is 401 without headers", async () => {
    const clock = t.service.testClock as AdjustableClock;
    const { end } = startOfWindow(clock);
    const { apiKey, accountId } = await t.newAccount("free");

    const refused = await t.call("GET", "/v1/agents", { key: "hnd_not-a-real-key" });
    expectError(refused, 401, "UNAUTHORIZED");
    expectNoRateHeaders(refused);

    const listed = await t.call("GET", "/v1/agents", { key: apiKey });
    expect(listed.statusCode, listed.body).toBe(200);
    expectRateHeaders(listed, 600, 599, end);

    for (let i = 1; i <= 10; i++) {
      const res = await t.call("DELETE", `/v1/accounts/${accountId}/api-keys/${randomUUID()}`, {
        key: apiKey,
      });
      expectError(res, 404, "NOT_FOUND");
      expectRateHeaders(res, 10, 10 - i, end);
    }
    const limited = await t.call("DELETE", `/v1/accounts/${accountId}/api-keys/${randomUUID()}`, {
      key: apiKey,
    });
    expectError(limited, 429, "RATE_LIMITED");
    expect(Number(limited.headers["retry-after"])).toBeGreaterThanOrEqual(1);

    // Another key of the same account has buckets of its own: limits are per key.
    const created = await t.call("POST", `/v1/accounts/${accountId}/api-keys`, {
      key: apiKey,
      body: { name: "second" },
    });
    expect(created.statusCode, created.body).toBe(201);
    expectRateHeaders(created, 10, 9, end);
    const second = created.json().api_key as string;
    const res = await t.call("DELETE", `/v1/accounts/${accountId}/api-keys/${randomUUID()}`, { key: second });
    expectError(res, 404, "NOT_FOUND");
    expectRateHeaders(res, 10, 9, end);
  });
});
