import type { FastifyInstance } from "fastify";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { buildApp } from "../../src/http/app.js";
import { openService, type Service } from "../../src/service.js";
import { waitUntil } from "../http/transfer-helpers.js";
import { ADMIN_TOKEN } from "../support/app.js";
import { freshPostgres, postgresServer, postgresSkipReason, tempDir, titled } from "../support/databases.js";
import { checkAnswersAgainstDocument } from "../support/openapi-check.js";
import { type Receiver, startReceiver } from "../support/webhook-receiver.js";

interface Instance {
  service: Service;
  app: FastifyInstance;
  close(): Promise<void>;
}

/** A whole service (projections, reactors, dispatcher) and its HTTP app on a shared database. */
async function instance(env: Record<string, string>): Promise<Instance> {
  const service = await openService(
    loadConfig({ ADMIN_TOKEN, TEST_CLOCK: "1", WEBHOOKS_ALLOW_PRIVATE: "1", ...env }),
  );
  const app = await buildApp(service, { instrument: checkAnswersAgainstDocument });
  return {
    service,
    app,
    async close() {
      await app.close();
      await service.close();
    },
  };
}

async function call(app: FastifyInstance, method: string, url: string, key: string, body?: unknown) {
  const res = await app.inject({
    method: method as "POST",
    url,
    headers: { authorization: `Bearer ${key}` },
    ...(body === undefined ? {} : { payload: body as object }),
  });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json();
}

/** An account with `agents` agents whose webhooks point at the receiver; returns the key and ids. */
async function hookedAccount(app: FastifyInstance, receiver: Receiver, agents: number) {
  const created = await call(app, "POST", "/v1/admin/accounts", ADMIN_TOKEN, {
    email: `hooks-${Date.now()}-${Math.random()}@example.com`,
    plan: "team",
  });
  const key = created.api_key.api_key as string;
  const ids: string[] = [];
  for (let i = 0; i < agents; i++) {
    const agent = await call(app, "POST", "/v1/agents/register", key, {
      agent_id: `agent-${i}`,
      public_key: Buffer.alloc(32, i + 1).toString("base64"),
      webhook_url: receiver.url,
    });
    ids.push(agent.id);
  }
  return { key, ids };
}

/** How many requests arrived per message id. */
const perMessage = (receiver: Receiver) => {
  const counts = new Map<string, number>();
  for (const r of receiver.received) {
    const id = String(r.headers["webhook-id"]);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
};

describe.skipIf(!postgresServer)(
  titled("webhook delivery across instances and restarts", postgresSkipReason),
  () => {
    const cleanups: (() => Promise<void> | void)[] = [];
    afterAll(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
    });

    async function shared() {
      const database = await freshPostgres(postgresServer as string);
      const dir = tempDir();
      const receiver = await startReceiver();
      cleanups.push(
        () => database.drop(),
        () => dir.remove(),
        () => receiver.close(),
      );
      return { env: { DATABASE_URL: database.url, DATA_DIR: dir.path }, receiver };
    }

    it("two instances never send one message at once: each of 60 messages arrives exactly once", async () => {
      const { env, receiver } = await shared();
      const one = await instance(env);
      const two = await instance(env);
      cleanups.push(
        () => one.close(),
        () => two.close(),
      );
      const { key, ids } = await hookedAccount(one.app, receiver, 6);
      const expected: string[] = [];
      for (let round = 0; round < 10; round++) {
        for (const [i, id] of ids.entries()) {
          const app = i % 2 === 0 ? one.app : two.app;
          expected.push((await call(app, "POST", `/v1/agents/${id}/webhook-test`, key)).message_id);
        }
      }
      await waitUntil(() => perMessage(receiver).size === 60, "all 60 messages arrived", 60_000);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const counts = perMessage(receiver);
      expect([...counts.keys()].sort()).toEqual([...expected].sort());
      expect(
        [...counts.values()].every((n) => n === 1),
        JSON.stringify([...counts]),
      ).toBe(true);
      const attempts = await one.service.store.readAll(null, 100_000);
      expect(attempts.filter((e) => e.type === "WebhookAttempted")).toHaveLength(60);
      // First attempts leave in log order per agent.
      for (const id of ids) {
        const order = receiver.received
          .filter((r) => JSON.parse(r.body).data.agent_id === `agent-${ids.indexOf(id)}`)
          .map((r) => String(r.headers["webhook-id"]));
        expect(order).toEqual(expected.filter((_, n) => n % ids.length === ids.indexOf(id)));
      }
    });

    it("a service stopped with messages pending delivers every one after its restart", async () => {
      const { env, receiver } = await shared();
      receiver.answer = () => ({ status: 503 });
      const before = await instance(env);
      const { key, ids } = await hookedAccount(before.app, receiver, 2);
      const expected: string[] = [];
      for (let i = 0; i < 20; i++) {
        const id = ids[i % 2] as string;
        expected.push((await call(before.app, "POST", `/v1/agents/${id}/webhook-test`, key)).message_id);
      }
      // Stopped at once: some messages have failed an attempt, some perhaps were not even queued.
      await before.close();
      expect(delivered(receiver).size).toBe(0);

      receiver.answer = () => ({ status: 200 });
      const after = await instance(env);
      cleanups.push(() => after.close());
      // The retries are due 5 s after each failure, on the restarted service's clock.
      after.service.testClock?.advance(10);
      await waitUntil(
        () => delivered(receiver).size === 20,
        "every message delivered after the restart",
        60_000,
      );
      expect([...delivered(receiver)].sort()).toEqual([...expected].sort());
    });
  },
);

/** Message ids the receiver answered 200 to. */
function delivered(receiver: Receiver): Set<string> {
  return new Set(
    receiver.received.filter((r) => r.answered === 200).map((r) => String(r.headers["webhook-id"])),
  );
}
