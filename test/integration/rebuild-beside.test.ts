import type { Knex } from "knex";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projections } from "../../projections/index.js";
import { openDatabase } from "../../src/db/database.js";
import { PostgresEventStore } from "../../src/eventstore/postgres.js";
import { type LogOn, rebuildBeside } from "../../src/read-models/rebuild-beside.js";
import { advanceClock } from "../http/helpers.js";
import { newParties, type Parties, postTransfer } from "../http/transfer-helpers.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postgresServer, postgresSkipReason, titled } from "../support/databases.js";
import { dumpReadModels } from "../support/read-models.js";

/**
 * Sends per rate-limit window (60 a minute per key), beside the few still in flight when the clock
 * moves on; moving it 61 s always lands in a window of its own.
 */
const SENDS_PER_WINDOW = 50;

/** Requests that keep sending and reading transfers until stopped; every answer that is not 2xx counts. */
function writeLoad(t: TestApp, parties: Parties, clients: number) {
  const shown = new Map<string, string>();
  const failures: string[] = [];
  let requests = 0;
  // The first send moves the clock on too: the sends made before the load count in the window it found.
  let inWindow = SENDS_PER_WINDOW;
  let running = true;
  const client = async () => {
    while (running) {
      if (++inWindow > SENDS_PER_WINDOW) {
        inWindow = 0;
        await advanceClock(t, 61);
      }
      const sent = await postTransfer(t, parties.apiKey, [{ name: "a.txt", data: Buffer.from("hello") }]);
      requests++;
      if (sent.statusCode !== 201) {
        failures.push(`send ${sent.statusCode} ${sent.body}`);
        continue;
      }
      const id = sent.json().id as string;
      // A GET waits for the read models to reach the send, then reads them: the rebuilt ones after the switch.
      const read = await t.call("GET", `/v1/transfers/${id}`, { key: parties.apiKey });
      const listed = await t.call("GET", "/v1/transfers?limit=5", { key: parties.apiKey });
      requests += 2;
      if (read.statusCode !== 200) failures.push(`get ${read.statusCode} ${read.body}`);
      else shown.set(id, read.body);
      if (listed.statusCode !== 200) failures.push(`list ${listed.statusCode} ${listed.body}`);
    }
  };
  const done = Promise.all(Array.from({ length: clients }, client));
  return {
    shown,
    failures,
    get requests() {
      return requests;
    },
    async stop() {
      running = false;
      await done;
    },
  };
}

/** The log as `logOn` gives it, but the first read of it waits for `first` to settle. */
function firstReadWaits(logOn: LogOn, first: () => Promise<void>): LogOn {
  let waited = false;
  return (on) => {
    const store = logOn(on);
    const readAll = store.readAll.bind(store);
    store.readAll = async (from, limit) => {
      if (!waited) {
        waited = true;
        await first();
      }
      return readAll(from, limit);
    };
    return store;
  };
}

/** Settles once the load has been answered `more` more times, or fails after 30 s. */
async function answeredMore(load: { readonly requests: number }, more: number): Promise<void> {
  const until = load.requests + more;
  const deadline = Date.now() + 30_000;
  while (load.requests < until) {
    if (Date.now() > deadline)
      throw new Error(`the live service answered no request beside the rebuild in 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The read-model tables' indexes (constraints' included) and whether each table is logged, as migrations left them. */
async function tableShapes(db: Knex): Promise<unknown[]> {
  const tables = projections.flatMap((p) => p.tables);
  const result = await db.raw<{ rows: unknown[] }>(
    `select c.relname as table, c.relpersistence as persistence, i.indexname, i.indexdef
       from pg_class c join pg_indexes i on i.tablename = c.relname and i.schemaname = current_schema()
      where c.relnamespace = current_schema()::regnamespace and c.relname = any(?::text[])
      order by 1, 3`,
    [tables],
  );
  return result.rows;
}

/** The live read models (caught up) equal what emptying them and replaying the whole log gives. */
async function expectFreshRebuildEqual(t: TestApp): Promise<void> {
  const live = await dumpReadModels(t.service.db);
  await t.service.engine.stop();
  await t.service.engine.rebuild(
    projections.map((p) => p.name),
    () => {},
  );
  expect(await dumpReadModels(t.service.db)).toEqual(live);
  await t.service.engine.start();
}

async function leftoverSchemas(db: Knex): Promise<string[]> {
  const result = await db.raw<{ rows: { nspname: string }[] }>(
    "select nspname from pg_namespace where nspname ~ '^handoff_(rebuild|retired)_'",
  );
  return result.rows.map((row) => row.nspname);
}

function besideSuite(database: "pglite" | "postgres") {
  return () => {
    let t: TestApp;
    let parties: Parties;
    /** The rebuild's own connections: another process's on PostgreSQL, the service's one on PGlite. */
    let rebuildDb: Knex;
    beforeAll(async () => {
      t = await startTestApp({ database });
      parties = await newParties(t, "enterprise");
      rebuildDb =
        database === "postgres" ? openDatabase({ kind: "postgres", url: databaseUrl(t) }) : t.service.db;
    });
    afterAll(async () => {
      if (rebuildDb && rebuildDb !== t?.service.db) await rebuildDb.destroy();
      await t?.close();
    });

    it("switches every read model in under write load: no request fails, no event is missed", {
      timeout: 180_000,
    }, async () => {
      for (let i = 0; i < 30; i++) {
        const sent = await postTransfer(t, parties.apiKey, [{ name: "b.txt", data: Buffer.from("old") }]);
        expect(sent.statusCode, sent.body).toBe(201);
      }
      const shapes = await tableShapes(t.service.db);
      const load = writeLoad(t, parties, 4);
      let atStart = 0;
      let atSwitch = 0;
      try {
        await new Promise((resolve) => setTimeout(resolve, 300));
        atStart = load.requests;
        // A log this short fills faster than one request round: the fill's first read waits until the
        // live service has answered requests beside it, and fails if the rebuild keeps them from it.
        await rebuildBeside(
          rebuildDb,
          firstReadWaits(
            (on) => new PostgresEventStore(on),
            () => answeredMore(load, 6),
          ),
          projections,
          () => {},
        );
        atSwitch = load.requests;
        // The load goes on after the switch: the live engine must go on from the switched checkpoints.
        while (load.requests < atSwitch + 30) await new Promise((resolve) => setTimeout(resolve, 20));
      } finally {
        await load.stop();
      }

      expect(load.failures).toEqual([]);
      // The load really ran beside the rebuild: requests were answered while it filled and switched.
      expect(atSwitch - atStart).toBeGreaterThanOrEqual(6);
      expect(await leftoverSchemas(rebuildDb)).toEqual([]);
      // The switched-in tables are the ones migrations know: logged, every index under its name.
      expect(await tableShapes(t.service.db)).toEqual(shapes);

      // What the live service showed of each transfer during the load, it shows now.
      expect(await t.service.engine.caughtUp()).toBe(true);
      for (const [id, body] of load.shown) {
        const now = await t.call("GET", `/v1/transfers/${id}`, { key: parties.apiKey });
        expect(now.body).toBe(body);
      }
      const listed = await t.call("GET", "/v1/transfers?limit=1", { key: parties.apiKey });
      expect(listed.json().total).toBe(30 + load.shown.size);

      // And the switched-in read models, caught up, are what a fresh full rebuild gives.
      await expectFreshRebuildEqual(t);
    });

    it("a live engine behind the rebuilt tables goes on from where they were switched in", async () => {
      // Sends answer from their decided state: with the live projections stopped, the log runs ahead.
      await t.service.engine.stop();
      await advanceClock(t, 61);
      const sent: string[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await postTransfer(t, parties.apiKey, [{ name: "c.txt", data: Buffer.from("late") }]);
        expect(res.statusCode, res.body).toBe(201);
        sent.push(res.json().id);
      }
      await rebuildBeside(
        rebuildDb,
        (on) => new PostgresEventStore(on),
        projections,
        () => {},
      );
      await t.service.engine.start();
      expect(await t.service.engine.caughtUp()).toBe(true);
      for (const id of sent) {
        expect((await t.call("GET", `/v1/transfers/${id}`, { key: parties.apiKey })).statusCode).toBe(200);
      }
      await expectFreshRebuildEqual(t);
    });
  };
}

function databaseUrl(t: TestApp): string {
  const url = t.service.config.databaseUrl;
  if (!url) throw new Error("the PostgreSQL suite runs on DATABASE_URL");
  return url;
}

describe("read models rebuilt beside the live service on PGlite", besideSuite("pglite"));
describe.skipIf(!postgresServer)(
  titled("read models rebuilt beside the live service on PostgreSQL", postgresSkipReason),
  besideSuite("postgres"),
);
