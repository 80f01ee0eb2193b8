/**
 * The transparency log at size (issue 32), on PostgreSQL (a fresh database) with a log of
 * BENCH_LOG_EVENTS (default 1,000,000) of the service's own events (a transfer's life: created,
 * counted, downloaded, downloaded out), seeded through the event store in batches:
 *
 * 1. Hashing: the log's hasher catching up on the whole log, as a server started on it would:
 *    events/s. Baseline in the same run: reading the log in the same batches and doing nothing.
 * 2. Storage: bytes per leaf of the tree (its tiles) and of the leaf positions beside it.
 * 3. Proofs: inclusion proofs of random leaves and consistency proofs from random sizes to the
 *    whole tree, as the routes ask the log for them: p50 and p99 in ms. Baseline: reading one tile
 *    row by its key, the least a proof can cost.
 * 4. `handoff log check`, the real command on the same database (its leaves read and hashed by a
 *    thread a CPU): events/s, beside the read floor of (1) and the same check run in-process on
 *    one thread, as the server runs it on start.
 *
 *   npm run build && node --import tsx bench/transparency.ts
 *
 * Environment: BENCH_LOG_EVENTS (1000000), BENCH_PROOFS (2000), BENCH_POSTGRES_URL.
 */
import { execFile } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Knex } from "knex";
import { migrate, openDatabase } from "../src/db/database.js";
import { PostgresEventStore } from "../src/eventstore/postgres.js";
import { TransparencyLog } from "../src/transparency/log.js";
import { seedTransfers } from "./seed-events.js";
import { benchDatabase, guard, loadAverage, pad, percentile, ROOT, sleep, tempRoot } from "./support.js";

const run = promisify(execFile);

const EVENTS = Number(process.env.BENCH_LOG_EVENTS ?? 1_000_000);
const PROOFS = Number(process.env.BENCH_PROOFS ?? 2000);
const READ_BATCH = 2000;
const TIME_LIMIT_MS = 25 * 60 * 1000;
const TARGETS = { proofP99Ms: 20, checkPerSecond: 50_000, bytesPerLeaf: 100 };

function seed(db: Knex): Promise<number> {
  const parties = { accountId: randomUUID(), sender: randomUUID(), recipient: randomUUID() };
  return seedTransfers(new PostgresEventStore(db), Math.ceil(EVENTS / 4), parties);
}

/** The read floor: the whole log in the hasher's batches, nothing done with it; events/s. */
async function readFloor(db: Knex, events: number): Promise<number> {
  const store = new PostgresEventStore(db);
  const started = performance.now();
  let from: string | null = null;
  let read = 0;
  for (;;) {
    const batch = await store.readAll(from, READ_BATCH);
    if (batch.length === 0) break;
    read += batch.length;
    from = batch.at(-1)?.position ?? from;
  }
  if (read !== events) throw new Error(`read ${read} events, expected ${events}`);
  return read / ((performance.now() - started) / 1000);
}

async function hashAll(log: TransparencyLog, events: number): Promise<number> {
  const started = performance.now();
  await log.start();
  for (;;) {
    const newest = await log.newestCheckpoint();
    if (newest && newest.size >= events) break;
    await sleep(100);
  }
  return events / ((performance.now() - started) / 1000);
}

async function storage(db: Knex, leaves: number) {
  const size = async (table: string) => {
    const { rows } = await db.raw<{ rows: { bytes: string }[] }>(
      "select pg_total_relation_size(?)::text as bytes",
      [table],
    );
    return Number(rows[0]?.bytes);
  };
  return { tree: (await size("log_tiles")) / leaves, positions: (await size("log_leaf_positions")) / leaves };
}

function summary(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

async function timeEach(count: number, work: (i: number) => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await work(i);
    samples.push(performance.now() - started);
  }
  return samples;
}

const random = (below: number) => randomBytes(6).readUIntBE(0, 6) % below;

/**
 * `handoff log check` as an operator runs it, on the same database and log key: the check's own
 * events/s (the seconds it reports) and the whole command's time, start-up included.
 */
async function logCheckCommand(databaseUrl: string, logKey: Buffer, events: number) {
  const temp = tempRoot("handoff-bench-log-check");
  const started = performance.now();
  try {
    const { stdout } = await run(process.execPath, [join(ROOT, "dist/src/cli.js"), "log", "check"], {
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        DATA_DIR: temp.dir,
        LOG_KEY: logKey.toString("base64"),
        LOG_ORIGIN: "bench.example/handoff",
      },
      maxBuffer: 1 << 20,
    });
    const report = JSON.parse(stdout) as { ok: boolean; leaves: number; seconds: number; problem?: string };
    if (!report.ok || report.leaves !== events) throw new Error(`handoff log check: ${stdout}`);
    return { checkRate: report.leaves / report.seconds, wallSeconds: (performance.now() - started) / 1000 };
  } finally {
    temp.cleanup();
  }
}

async function main(): Promise<void> {
  guard(TIME_LIMIT_MS, "bench/transparency.ts");
  console.log(`transparency log at ${EVENTS} events (load ${loadAverage()})`);
  const database = await benchDatabase();
  const db = openDatabase({ kind: "postgres", url: database.url });
  const logKey = randomBytes(32);
  try {
    await migrate(db);
    const events = await seed(db);
    const floor = await readFloor(db, events);
    const log = new TransparencyLog(new PostgresEventStore(db), db, "bench.example/handoff", logKey, (e) =>
      console.error(e),
    );
    const hashed = await hashAll(log, events);
    console.log(
      `  hashing:  ${pad(Math.round(hashed), 8)} events/s   read floor ${Math.round(floor)} events/s`,
    );

    const bytes = await storage(db, events);
    console.log(
      `  storage:  tree ${bytes.tree.toFixed(1)} B/leaf (target ≤ ${TARGETS.bytesPerLeaf}), leaf positions ${bytes.positions.toFixed(1)} B/leaf`,
    );

    const inclusion = summary(await timeEach(PROOFS, () => log.inclusion(random(events), events)));
    const consistency = summary(
      await timeEach(PROOFS, () => log.consistency(1 + random(events - 1), events)),
    );
    const tileRead = summary(
      await timeEach(PROOFS, (i) =>
        db("log_tiles")
          .where({ level: 0, tile: (i * 7919) % Math.floor(events / 256) })
          .first(),
      ),
    );
    const ms = (value: number) => `${value.toFixed(2)} ms`;
    console.log(
      `  inclusion proof:   p50 ${ms(inclusion.p50)}  p99 ${ms(inclusion.p99)} (target ≤ ${TARGETS.proofP99Ms} ms)`,
    );
    console.log(
      `  consistency proof: p50 ${ms(consistency.p50)}  p99 ${ms(consistency.p99)} (target ≤ ${TARGETS.proofP99Ms} ms)`,
    );
    console.log(`  baseline, one tile row read: p50 ${ms(tileRead.p50)}  p99 ${ms(tileRead.p99)}`);

    const started = performance.now();
    const result = await log.check();
    const inThread = events / ((performance.now() - started) / 1000);
    if (!result.ok) throw new Error(`the check failed: ${result.problem}`);
    await log.stop();
    const command = await logCheckCommand(database.url, logKey, events);
    console.log(
      `  handoff log check: ${pad(Math.round(command.checkRate), 8)} events/s (target ≥ ${TARGETS.checkPerSecond}; ` +
        `the whole command ${command.wallSeconds.toFixed(1)} s)   read floor ${Math.round(floor)} events/s, ` +
        `the same check on one thread in-process ${Math.round(inThread)} events/s`,
    );
  } finally {
    await db.destroy();
    await database.drop();
  }
}

await main();
