/**
 * History at scale (issue 10), on PostgreSQL (a fresh database):
 *
 * 1. The audit feed of one account with BENCH_AUDIT_EVENTS (default 100,000) events, paged through
 *    the compiled server's `GET /v1/audit?limit=1000` from start to end: entries/s. Baseline in the
 *    same run: the same pages read straight from the history read model with one SQL query each
 *    (no HTTP, no JSON, no opening of sealed values), so the ratio is what the API adds.
 * 2. A full rebuild of every projection from that log in place (`ProjectionEngine.rebuild`, as
 *    `handoff replay` runs it; bench/rebuild.ts times the CLI): events/s. Baseline in the same run: reading the whole
 *    log in the rebuild's batches and doing nothing with it.
 *
 * The events are the service's own (TransferCreated, TransferCounted, DownloadRecorded,
 * TransferDownloaded; four per transfer), appended through the event store in batches rather than
 * made one request at a time, so that seeding 100,000 takes seconds, not the better part of an hour.
 *
 *   npm run build && node --import tsx bench/audit.ts
 *
 * Environment: BENCH_AUDIT_EVENTS (100000), BENCH_RUNS (3: best of), BENCH_POSTGRES_URL.
 */
import { join } from "node:path";
import type { Knex } from "knex";
import { projections } from "../projections/index.js";
import { openDatabase } from "../src/db/database.js";
import { PostgresEventStore } from "../src/eventstore/postgres.js";
import { ProjectionEngine } from "../src/read-models/engine.js";
import { seedAccountHistory } from "./seed-account.js";
import {
  benchDatabase,
  guard,
  loadAverage,
  pad,
  requestJson,
  type ServerChild,
  startHandoff,
  tempRoot,
} from "./support.js";

const EVENTS = Number(process.env.BENCH_AUDIT_EVENTS ?? 100_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PAGE = 1000;
const TARGET_AUDIT = 5_000;
const TARGET_REBUILD = 20_000;
const TIME_LIMIT_MS = 9 * 60 * 1000;

interface Seeded {
  accountId: string;
  apiKey: string;
  events: number;
}

async function seed(server: ServerChild, db: Knex): Promise<Seeded> {
  const account = await seedAccountHistory(server, db, Math.ceil(EVENTS / 4), {
    email: "bench-audit@example.com",
    plan: "enterprise",
  });
  const total = await db("history_index")
    .where({ subject: `account:${account.accountId}` })
    .count({ n: "*" });
  return { ...account, events: Number(total[0]?.n) };
}

/** Every page of the feed through the API; entries/s. */
async function auditThroughApi(server: ServerChild, seeded: Seeded): Promise<number> {
  const started = performance.now();
  let entries = 0;
  let cursor: string | null = null;
  for (;;) {
    const url: string = `${server.baseUrl}/v1/audit?limit=${PAGE}${cursor ? `&cursor=${cursor}` : ""}`;
    const page = await requestJson<{ entries: unknown[]; next_cursor: string | null; has_more: boolean }>(
      "GET",
      url,
      {
        headers: { authorization: `Bearer ${seeded.apiKey}` },
      },
    );
    if (page.status !== 200) throw new Error(`audit page: ${page.status} ${JSON.stringify(page.json)}`);
    entries += page.json.entries.length;
    cursor = page.json.next_cursor;
    if (!page.json.has_more) break;
  }
  if (entries !== seeded.events)
    throw new Error(`the feed gave ${entries} entries, expected ${seeded.events}`);
  return entries / ((performance.now() - started) / 1000);
}

/** The same pages straight from the read model, one keyset query each; entries/s. */
async function auditInSql(db: Knex, seeded: Seeded): Promise<number> {
  const started = performance.now();
  let entries = 0;
  let after = "";
  for (;;) {
    const rows = await db("history_index as i")
      .join("history_entries as e", "e.position", "i.position")
      .where("i.subject", `account:${seeded.accountId}`)
      .where("i.position", ">", after)
      .orderBy("i.position")
      .limit(PAGE)
      .select("e.*");
    entries += rows.length;
    if (rows.length < PAGE) break;
    after = rows[rows.length - 1].position;
  }
  return entries / ((performance.now() - started) / 1000);
}

/** Every projection rebuilt from the whole log; events/s. */
async function rebuild(db: Knex, logEvents: number): Promise<number> {
  const engine = new ProjectionEngine(projections, new PostgresEventStore(db), db, () => {});
  const started = performance.now();
  await engine.rebuild(
    projections.map((p) => p.name),
    () => {},
  );
  return logEvents / ((performance.now() - started) / 1000);
}

/** The rebuild's reads alone: the whole log in its batches; events/s. */
async function readLog(db: Knex): Promise<{ perSecond: number; events: number }> {
  const store = new PostgresEventStore(db);
  const started = performance.now();
  let events = 0;
  let from: string | null = null;
  for (;;) {
    const batch = await store.readAll(from, 1000);
    if (batch.length === 0) break;
    events += batch.length;
    from = batch[batch.length - 1]?.position ?? from;
  }
  return { perSecond: events / ((performance.now() - started) / 1000), events };
}

async function main(): Promise<void> {
  guard(TIME_LIMIT_MS, "bench/audit.ts");
  const database = await benchDatabase();
  const root = tempRoot("handoff-bench-audit-");
  const db = openDatabase({ kind: "postgres", url: database.url });
  let server: ServerChild | null = null;
  try {
    console.log(
      `history at scale: ${EVENTS} events on one account, PostgreSQL, best of ${RUNS} (load ${loadAverage()})`,
    );
    server = await startHandoff({ dataDir: join(root.dir, "data"), env: { DATABASE_URL: database.url } });
    const seeded = await seed(server, db);

    const api: number[] = [];
    const sql: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      // Alternate the order so neither always runs on a warmer cache.
      if (run % 2 === 0) {
        api.push(await auditThroughApi(server, seeded));
        sql.push(await auditInSql(db, seeded));
      } else {
        sql.push(await auditInSql(db, seeded));
        api.push(await auditThroughApi(server, seeded));
      }
    }
    await server.stop();
    server = null;

    const rebuilt: number[] = [];
    const read: number[] = [];
    let logEvents = 0;
    for (let run = 0; run < RUNS; run++) {
      const log = await readLog(db);
      logEvents = log.events;
      read.push(log.perSecond);
      rebuilt.push(await rebuild(db, logEvents));
    }

    const best = (values: number[]) => Math.max(...values);
    const audit = best(api);
    const rebuildRate = best(rebuilt);
    console.log(`  audit feed, ${seeded.events} entries in pages of ${PAGE}:`);
    console.log(
      `    through the API      ${pad(audit.toFixed(0), 8)} entries/s  (target ≥ ${TARGET_AUDIT}: ${audit >= TARGET_AUDIT ? "met" : "NOT met"})`,
    );
    console.log(
      `    baseline, plain SQL  ${pad(best(sql).toFixed(0), 8)} entries/s  (API at ${((audit / best(sql)) * 100).toFixed(0)} % of it)`,
    );
    console.log(`  full rebuild of ${projections.length} projections, ${logEvents} events in the log:`);
    console.log(
      `    rebuild              ${pad(rebuildRate.toFixed(0), 8)} events/s   (target ≥ ${TARGET_REBUILD}: ${rebuildRate >= TARGET_REBUILD ? "met" : "NOT met"})`,
    );
    console.log(
      `    baseline, reads only ${pad(best(read).toFixed(0), 8)} events/s   (rebuild at ${((rebuildRate / best(read)) * 100).toFixed(0)} % of it)`,
    );
    console.log(
      `  runs: api ${api.map((v) => v.toFixed(0)).join(", ")}; rebuild ${rebuilt.map((v) => v.toFixed(0)).join(", ")}`,
    );
  } finally {
    await server?.stop();
    await db.destroy();
    await database.drop();
    root.cleanup();
  }
}

await main();
