import type { Knex } from "knex";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { openService } from "../../src/service.js";
import { handoff } from "../client/support.js";
import { expectError } from "../http/helpers.js";
import { downloadOk, newParties, sendTransfer, waitUntil } from "../http/transfer-helpers.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postgresServer, postgresSkipReason, titled } from "../support/databases.js";

/** Events in log order, as the PostgreSQL event store orders them. */
async function eventRows(db: Knex): Promise<{ global_position: string; type: string }[]> {
  const { rows } = await db.raw<{ rows: { global_position: string; type: string }[] }>(
    "select global_position::text, type from events order by transaction_id, global_position",
  );
  return rows;
}

/** A service with some history, every event of it hashed and signed. */
async function appWithHistory(database: "pglite" | "postgres"): Promise<TestApp> {
  const t = await startTestApp({ database });
  const { apiKey } = await newParties(t);
  const transfer = await sendTransfer(t, apiKey);
  await downloadOk(t, apiKey, transfer.id, "bob");
  const events = (await eventRows(t.service.db)).length;
  await waitUntil(
    async () => ((await t.service.transparency.newestCheckpoint())?.size ?? 0) >= events,
    "a checkpoint of every event",
  );
  return t;
}

/** The leaf index of the n-th event in log order (the tree's leaves are the events in that order). */
const TAMPERED_LEAF = 5;

const at = (rows: { global_position: string }[], index: number) => rows[index]?.global_position ?? "none";

const tamperings: { name: string; tamper(db: Knex, rows: { global_position: string }[]): Promise<void> }[] = [
  {
    name: "an edited event",
    tamper: (db, rows) =>
      db.raw(`update events set data = data || '{"sizeBytes": 1}'::jsonb where global_position = ?`, [
        at(rows, TAMPERED_LEAF),
      ]),
  },
  {
    name: "a removed event",
    tamper: (db, rows) => db.raw("delete from events where global_position = ?", [at(rows, TAMPERED_LEAF)]),
  },
  {
    name: "two events swapped",
    tamper: async (db, rows) => {
      const [a, b] = [at(rows, TAMPERED_LEAF), at(rows, TAMPERED_LEAF + 1)];
      await db.raw(
        `update events e set type = o.type, data = o.data, metadata = o.metadata
           from events o
          where (e.global_position, o.global_position) in ((?::bigint, ?::bigint), (?::bigint, ?::bigint))`,
        [a, b, b, a],
      );
    },
  },
];

function describeOn(database: "pglite" | "postgres") {
  const skip = database === "postgres" && !postgresServer;
  describe.skipIf(skip)(
    titled(`tamper evidence on ${database} (decisions 9.4)`, skip ? postgresSkipReason : ""),
    () => {
      for (const { name, tamper } of tamperings) {
        it(`finds ${name}, names its leaf, turns /readyz to LOG_TAMPERED and signs no more`, async () => {
          const t = await appWithHistory(database);
          try {
            expect(await t.service.transparency.check()).toMatchObject({ ok: true });
            expect((await t.call("GET", "/readyz")).statusCode).toBe(200);
            await tamper(t.service.db, await eventRows(t.service.db));

            const result = await t.service.transparency.check();
            expect(result).toMatchObject({ ok: false, leafIndex: TAMPERED_LEAF });
            const ready = expectError(await t.call("GET", "/readyz"), 503, "LOG_TAMPERED");
            expect(ready.message).toContain(`leaf ${TAMPERED_LEAF}`);

            const signed = (await t.service.transparency.newestCheckpoint())?.size;
            const { apiKey } = await newParties(t);
            await sendTransfer(t, apiKey);
            await new Promise((resolve) => setTimeout(resolve, 1500));
            expect((await t.service.transparency.newestCheckpoint())?.size).toBe(signed);
          } finally {
            await t.close();
          }
        });
      }
    },
  );
}

describeOn("pglite");
describeOn("postgres");

describe.skipIf(!postgresServer)(
  titled(
    "tamper evidence across a restart and from the command line",
    postgresServer ? "" : postgresSkipReason,
  ),
  () => {
    it("a server started on a rewritten log finds it, and `handoff log check` exits 5 naming the leaf", async () => {
      const t = await appWithHistory("postgres");
      try {
        const env = { DATABASE_URL: t.service.config.databaseUrl ?? "", DATA_DIR: t.service.config.dataDir };
        const clean = await handoff(["log", "check"], env);
        expect(clean.status, clean.stderr).toBe(0);
        expect(JSON.parse(clean.stdout)).toMatchObject({ ok: true });

        await tamperings[0]?.tamper(t.service.db, await eventRows(t.service.db));
        const found = await handoff(["log", "check"], env);
        expect(found.status, found.stderr).toBe(5);
        expect(JSON.parse(found.stdout)).toMatchObject({ ok: false, leafIndex: TAMPERED_LEAF });

        // The second server's hasher is the only one left, on a thread of its own (PostgreSQL).
        await t.service.transparency.stop();
        const second = await openService(loadConfig(env));
        try {
          expect(second.transparency.hasherThreadId).toBeTypeOf("number");
          await waitUntil(
            () => second.transparency.state.state === "tampered",
            "the start-up check to find it",
          );
          expect(second.transparency.state).toMatchObject({ leafIndex: TAMPERED_LEAF });

          // It hashes what is appended after, and signs none of it.
          const signed = (await second.transparency.newestCheckpoint())?.size;
          await t.newAccount();
          const head = await second.store.headPosition();
          expect(await second.transparency.waitForLeaf(head ?? "", 5000)).not.toBeNull();
          await new Promise((resolve) => setTimeout(resolve, 1000));
          expect((await second.transparency.newestCheckpoint())?.size).toBe(signed);
        } finally {
          await second.close();
        }
      } finally {
        await t.close();
      }
    });
  },
);
