import type { Knex } from "knex";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedTransfers } from "../../bench/seed-events.js";
import { projections } from "../../projections/index.js";
import { PostgresEventStore } from "../../src/eventstore/postgres.js";
import { dueForExpiry, dueForPurge, findTransfer } from "../../src/queries/transfers.js";
import { ProjectionEngine } from "../../src/read-models/engine.js";
import {
  migratedDatabase,
  postgresServer,
  postgresSkipReason,
  type TestDatabase,
  titled,
} from "../support/databases.js";

/**
 * Issue 34 part 1: the queries on one transfer's hot path (the download call's lookup, the
 * housekeeper's sweeps for expiry and purge, the stream read of a command and the log read of the
 * projections and the hasher) are served by an index, so their cost does not grow with history.
 * The transfers table holds GROWN rows of a finished history that nothing is due in, not yet
 * analyzed (as after the grown benchmark's seeding): at 150,000 rows the planner then scanned the
 * whole table for the purge sweep, unordered (docs/operations.md, "Cost at size"), and it does so
 * here too. The event log is small, so for its reads sequential scans are
 * priced out (enable_seqscan off) as the planner prices them at size. A query that only a scan of
 * the table can answer still plans one, and each test fails if its index is dropped.
 */
const HISTORY = 300;
const GROWN = 20_000;
const NOW = new Date("2026-11-29T00:00:00.000Z");
const ACCOUNT = "00000000-0000-4000-8000-0000000000a1";
const SENDER_AGENT = "00000000-0000-4000-8000-0000000000a2";
const RECIPIENT_AGENT = "00000000-0000-4000-8000-0000000000a3";

interface Plan {
  "Node Type": string;
  "Index Name"?: string;
  Plans?: Plan[];
}

/** Every node of a plan tree. */
const nodes = (plan: Plan): Plan[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

interface Statement {
  sql: string;
  bindings: Knex.RawBinding[];
}

/** The statements `run` sends to the database, with their bindings. */
async function statementsOf(db: Knex, run: () => Promise<unknown>): Promise<Statement[]> {
  const sent: Statement[] = [];
  // Sent as PostgreSQL numbers its parameters ($1, $2, … in order); knex.raw takes them as `?`.
  const listener = (query: Knex.Sql) =>
    sent.push({ sql: query.sql.replace(/\$\d+\b/g, "?"), bindings: [...query.bindings] });
  db.on("query", listener);
  try {
    await run();
  } finally {
    db.removeListener("query", listener);
  }
  return sent;
}

/**
 * The plan PostgreSQL chooses for the statement `run` sends; with `small`, sequential scans priced
 * out as for a big table.
 */
async function planOf(db: Knex, run: () => Promise<unknown>, small = false): Promise<Plan[]> {
  const [statement, ...others] = await statementsOf(db, run);
  if (!statement || others.length > 0) throw new Error("expected exactly one statement");
  return db.transaction(async (trx) => {
    if (small) await trx.raw("set local enable_seqscan = off");
    const explained = await trx.raw<{ rows: { "QUERY PLAN": { Plan: Plan }[] }[] }>(
      `explain (format json) ${statement.sql}`,
      statement.bindings,
    );
    const plan = explained.rows[0]?.["QUERY PLAN"][0]?.Plan;
    if (!plan) throw new Error("no plan");
    return nodes(plan);
  });
}

const indexesUsed = (plan: Plan[]) =>
  plan.flatMap((node) => (node["Index Name"] ? [node["Index Name"]] : []));
const scansTable = (plan: Plan[]) => plan.some((node) => node["Node Type"] === "Seq Scan");

describe.skipIf(!postgresServer)(
  titled("the hot path's queries are served by their indexes at any size of history", postgresSkipReason),
  () => {
    let database: TestDatabase;
    let store: PostgresEventStore;
    let transferId: string;

    beforeAll(async () => {
      database = await migratedDatabase("postgres");
      store = new PostgresEventStore(database.db);
      await seedTransfers(store, HISTORY, {
        accountId: ACCOUNT,
        sender: SENDER_AGENT,
        recipient: RECIPIENT_AGENT,
      });
      const engine = new ProjectionEngine(projections, store, database.db, () => {});
      await engine.rebuild(
        projections.map((p) => p.name),
        () => {},
      );
      const row = await database.db("transfers").first("id");
      transferId = row?.id as string;
      // Copies of a seeded row under other ids: downloaded out, kept until expiry, nothing due. The
      // table is left without statistics, as after a bulk growth or a rebuild of the read models
      // before autovacuum's analyze comes by: then the planner guesses a sixth of it is due.
      await database.db.raw("alter table transfers set (autovacuum_enabled = false)");
      await database.db.raw(
        `insert into transfers
         select (jsonb_populate_record(t, jsonb_build_object('id', 'tr_grown' || lpad(i::text, 16, '0')))).*
           from transfers t, generate_series(1, ?::int) as i where t.id = ?`,
        [GROWN, transferId],
      );
      await database.db.raw("analyze events");
    });
    afterAll(() => database?.close());

    it("finds a transfer by id (the download call, the file link) through its primary key", async () => {
      const plan = await planOf(database.db, () => findTransfer(database.db, transferId));
      expect(indexesUsed(plan)).toEqual(["transfers_pkey"]);
      expect(scansTable(plan)).toBe(false);
    });

    it("sweeps for expiry through the index of live transfers by expiry", async () => {
      const plan = await planOf(database.db, () => dueForExpiry(database.db, NOW, 100));
      expect(indexesUsed(plan)).toEqual(["transfers_live_by_expiry"]);
      expect(scansTable(plan)).toBe(false);
    });

    it("sweeps for purge through the index of files not yet deleted", async () => {
      const plan = await planOf(database.db, () => dueForPurge(database.db, NOW, 100));
      expect(indexesUsed(plan)).toEqual(["transfers_to_purge"]);
      expect(scansTable(plan)).toBe(false);
    });

    it("reads one transfer's stream (a command's check) through the stream's unique index", async () => {
      const plan = await planOf(database.db, () => store.readStream(`transfer-${transferId}`), true);
      expect(indexesUsed(plan)).toEqual(["events_stream_id_revision_key"]);
      expect(scansTable(plan)).toBe(false);
    });

    it("reads the log after a position (projections, hasher) through the commit-order index", async () => {
      const [middle] = await store.readAll(null, 1);
      const plan = await planOf(database.db, () => store.readAll(middle?.position ?? null, 500), true);
      expect(indexesUsed(plan)).toEqual(["events_commit_order"]);
      expect(scansTable(plan)).toBe(false);
    });
  },
);
