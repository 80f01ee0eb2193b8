import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handoff } from "../client/support.js";
import { downloadOk, newParties, sendTransfer } from "../http/transfer-helpers.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postgresServer, postgresSkipReason, titled } from "../support/databases.js";

/** Decisions 6.6 on PostgreSQL: the replay goes to a scratch schema beside the live read models. */
describe.skipIf(!postgresServer)(titled("handoff replay on PostgreSQL", postgresSkipReason), () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ database: "postgres" });
  });
  afterAll(async () => t?.close());

  it("builds the read models as they were at a position into a scratch schema, the live ones untouched", async () => {
    const { apiKey, accountId } = await newParties(t);
    const transfer = await sendTransfer(t, apiKey);
    await downloadOk(t, apiKey, transfer.id, "bob");
    const history = (await t.call("GET", `/v1/transfers/${transfer.id}/history`, { key: apiKey })).json();
    const created = history.entries[0].position as string;

    const { databaseUrl, dataDir } = t.service.config;
    const run = await handoff(["replay", "--until", created], {
      DATABASE_URL: databaseUrl as string,
      DATA_DIR: dataDir,
    });
    expect(run.status, run.stderr).toBe(0);
    const where = JSON.parse(run.stdout) as { schema: string; events: number; look: string };
    expect(where.schema).toMatch(/^replay_\d{14}$/);
    expect(where.look).toContain(where.schema);

    const db = t.service.db;
    const then = await db.withSchema(where.schema).from("transfers").where({ id: transfer.id }).first();
    expect(then).toMatchObject({ downloads: 0, sender_account_id: accountId });
    const now = await db("transfers").where({ id: transfer.id }).first();
    expect(now.downloads).toBe(1);
    const later = await db.withSchema(where.schema).from("history_entries").where("position", ">", created);
    expect(later).toEqual([]);
    await db.raw("drop schema ?? cascade", [where.schema]);
  });
});
