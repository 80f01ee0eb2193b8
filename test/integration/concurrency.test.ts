import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomPublicKey, startTestApp, type TestApp } from "../support/app.js";
import { postgresServer, postgresSkipReason, titled } from "../support/databases.js";

/** Uniqueness and limits hold at append time: parallel writers cannot both pass a read-model check. */
describe.skipIf(!postgresServer)(titled("concurrent registrations on PostgreSQL", postgresSkipReason), () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ database: "postgres" });
  });
  afterAll(async () => t?.close());

  it("gives exactly one 201 and 409 AGENT_ID_TAKEN for the rest of 20 parallel registrations of one slug", async () => {
    const { apiKey } = await t.newAccount("team");
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        t.call("POST", "/v1/agents/register", {
          key: apiKey,
          body: { agent_id: "same-slug", public_key: randomPublicKey() },
        }),
      ),
    );
    const statuses = responses.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([201, ...Array(19).fill(409)]);
    for (const r of responses.filter((r) => r.statusCode === 409)) {
      expect(r.json()).toEqual({
        error: { code: "AGENT_ID_TAKEN", message: expect.any(String), status: 409 },
      });
    }
    const list = await t.call("GET", "/v1/agents", { key: apiKey });
    expect(list.json().agents.map((a: { agent_id: string }) => a.agent_id)).toEqual(["same-slug"]);
  });

  it("lets no more agents than the plan allows through 20 parallel registrations of different slugs", async () => {
    const { apiKey } = await t.newAccount("free");
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        t.call("POST", "/v1/agents/register", { key: apiKey, body: { agent_id: `agent-${i}` } }),
      ),
    );
    const statuses = responses.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 201)).toHaveLength(2);
    expect(statuses.filter((s) => s === 403)).toHaveLength(18);
    const list = await t.call("GET", "/v1/agents", { key: apiKey });
    expect(list.json().agents).toHaveLength(2);
  });
});
