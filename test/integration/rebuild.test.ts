import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projections } from "../../projections/index.js";
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
  };
}

describe("projection rebuild on PGlite", rebuildSuite("pglite"));
describe.skipIf(!postgresServer)(
  titled("projection rebuild on PostgreSQL", postgresSkipReason),
  rebuildSuite("postgres"),
);
