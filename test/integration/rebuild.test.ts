import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { transferLife } from "../../bench/seed-events.js";
import { projections } from "../../projections/index.js";
import type { StreamAppend } from "../../src/eventstore/port.js";
import { ADMIN_TOKEN, randomPublicKey, startTestApp, type TestApp } from "../support/app.js";
import { postgresServer, postgresSkipReason, titled } from "../support/databases.js";
import { dumpReadModels } from "../support/read-models.js";

async function busyAccount(t: TestApp) {
  const { accountId, apiKey } = await t.newAccount("builder");
  const one = await t.call("POST", "/v1/agents/register", {
    key: apiKey,
    body: { agent_id: "one", public_key: randomPublicKey(), metadata: { role: "sender" } },
  });
  const two = await t.call("POST", "/v1/agents/register", { key: apiKey, body: { agent_id: "two" } });
  await t.call("POST", "/v1/agents/connect", {
    key: two.json().connection_token,
    body: { public_key: randomPublicKey() },
  });
  await t.call("PATCH", `/v1/agents/${one.json().id}`, {
    key: apiKey,
    body: { name: "One", agent_type: "mastra" },
  });
  await t.call("DELETE", `/v1/agents/${one.json().id}`, { key: apiKey });
  await t.call("POST", "/v1/agents/register", {
    key: apiKey,
    body: { agent_id: "one", public_key: randomPublicKey() },
  });
  const key = await t.call("POST", "/v1/api-keys", { key: apiKey, body: { name: "second" } });
  await t.call("DELETE", `/v1/accounts/${accountId}/api-keys/${key.json().id}`, { key: apiKey });
  await t.call("PATCH", `/v1/admin/accounts/${accountId}`, { key: ADMIN_TOKEN, body: { plan: "team" } });
}

function rebuildSuite(database: "pglite" | "postgres") {
  return () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ database });
    });
    afterAll(async () => t?.close());

    it("gives identical rows for every projection after a drop and rebuild from the log", async () => {
      await busyAccount(t);
      await busyAccount(t);
      const before = await dumpReadModels(t.service.db);
      expect(before.agents?.length).toBe(6);

      await t.service.engine.stop();
      const progress: number[] = [];
      for (const { name } of projections) {
        await t.service.engine.rebuild(name, ({ events }) => progress.push(events));
      }
      expect(Math.max(...progress)).toBeGreaterThan(0);
      expect(await dumpReadModels(t.service.db)).toEqual(before);
    });

    // A rebuild makes a batch's history rows while the batch before is still being written
    // (replayLog): a transfer whose stream began one batch (5,000 events) or more earlier must still
    // get its subjects, from that batch's rows or from the table.
    it("gives identical history when transfers' streams run on across the rebuild's batches", async () => {
      // A service of its own: the test before leaves its engine stopped.
      const t = await startTestApp({ database });
      onTestFinished(() => t.close());
      const parties = [randomUUID(), randomUUID(), randomUUID()] as const;
      const lives = Array.from({ length: 5_500 }, (_, i) =>
        transferLife(...parties, new Date(Date.UTC(2026, 10, 1) + i * 1000).toISOString()),
      );
      const inChunks = async (appends: (life: StreamAppend[]) => StreamAppend) => {
        for (let i = 0; i < lives.length; i += 500) {
          await t.service.store.appendMany(lives.slice(i, i + 500).map(appends));
        }
      };
      // Every transfer is created first (events 1–5,500), then each goes on (two events each):
      // the first 2,250 in the batch after the one they began in, the rest two or more after.
      await inChunks(([transfer]) => ({
        ...(transfer as StreamAppend),
        events: transfer?.events.slice(0, 1) ?? [],
      }));
      await inChunks(([transfer]) => ({
        ...(transfer as StreamAppend),
        expected: 0,
        events: transfer?.events.slice(1) ?? [],
      }));
      await t.service.engine.caughtUp(60_000);
      const before = await dumpReadModels(t.service.db);
      const first = lives[0]?.[0]?.streamId.replace("transfer-", "transfer:");
      expect(
        before.history_index?.filter((row) => (row as { subject: string }).subject === first),
      ).toHaveLength(3);

      await t.service.engine.stop();
      await t.service.engine.rebuild("history", () => {});
      expect(await dumpReadModels(t.service.db)).toEqual(before);
    }, 120_000);
  };
}

describe("projection rebuild on PGlite", rebuildSuite("pglite"));
describe.skipIf(!postgresServer)(
  titled("projection rebuild on PostgreSQL", postgresSkipReason),
  rebuildSuite("postgres"),
);
