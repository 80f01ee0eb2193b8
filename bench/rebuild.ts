/**
 * Rebuild and replay at size (issue 34), on PostgreSQL (a fresh database): `handoff projections
 * rebuild` (every read model, built beside the live tables and switched in) and `handoff replay
 * --until <the head>` (every read model into a scratch schema), each run as the real CLI from dist
 * under /usr/bin/time, on a small log first and then on the same log grown to BENCH_REBUILD_EVENTS:
 * events/s (the command's own time, start-up included) and the process's peak RSS. The small log's
 * figures are the baseline of the same run: a ratio near 1 says the cost per event and the memory
 * do not grow with the log.
 *
 * The events are the service's own (a transfer's life: created, counted, downloaded, downloaded
 * out), inserted straight into the events table in bulk (bench/seed-events.ts).
 *
 *   npm run build:server && npm run bench -- rebuild
 *
 * Environment: BENCH_REBUILD_EVENTS (500000), BENCH_REBUILD_BASELINE_EVENTS (100000),
 * BENCH_REBUILD_REPLAY (1; 0 times the rebuild alone, to save the replay's time on a big log),
 * BENCH_POSTGRES_URL.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { Knex } from "knex";
import { migrate, openDatabase } from "../src/db/database.js";
import { type ClientRun, requireTime, timedHandoff } from "./client-process.js";
import { seedTransfersInBulk } from "./seed-events.js";
import { benchDatabase, guard, loadAverage, pad, tempRoot } from "./support.js";

const EVENTS = Number(process.env.BENCH_REBUILD_EVENTS ?? 500_000);
const BASELINE_EVENTS = Number(process.env.BENCH_REBUILD_BASELINE_EVENTS ?? 100_000);
const WITH_REPLAY = process.env.BENCH_REBUILD_REPLAY !== "0";
const TARGETS = { rebuildPerSecond: 30_000, peakRssMiB: 512 };
/** Generous: seeding, a rebuild and a replay each of the big log, at a few thousand events a second on a busy machine. */
const TIME_LIMIT_MS = Math.max(10 * 60 * 1000, (EVENTS / 1000) * 1000);

interface Figures {
  events: number;
  rebuild: { perSecond: number; peakMiB: number };
  replay: { perSecond: number; peakMiB: number } | null;
}

const peakMiB = (run: ClientRun) => run.peakKb / 1024;

/** `handoff projections rebuild`, then `handoff replay` up to where it switched in (its scratch schema dropped after). */
async function measure(db: Knex, env: Record<string, string>, logEvents: number): Promise<Figures> {
  const rebuilt = await timedHandoff(["projections", "rebuild"], env);
  const rebuild = JSON.parse(rebuilt.stdout) as { events: number; seconds: number; position: string };
  if (rebuild.events !== logEvents) throw new Error(`rebuilt ${rebuild.events} events of ${logEvents}`);
  console.log(`  ${logEvents} events: rebuild ${describe(rebuild, rebuilt)}`);
  const figures = {
    events: logEvents,
    rebuild: { perSecond: rebuild.events / rebuild.seconds, peakMiB: peakMiB(rebuilt) },
  };
  if (!WITH_REPLAY) return { ...figures, replay: null };
  const replayed = await timedHandoff(["replay", "--until", rebuild.position], env);
  const replay = JSON.parse(replayed.stdout) as { events: number; seconds: number; schema: string };
  await db.raw("drop schema ?? cascade", [replay.schema]);
  if (replay.events !== logEvents) throw new Error(`replayed ${replay.events} events of ${logEvents}`);
  console.log(`  ${logEvents} events: replay ${describe(replay, replayed)}`);
  return { ...figures, replay: { perSecond: replay.events / replay.seconds, peakMiB: peakMiB(replayed) } };
}

const describe = (result: { events: number; seconds: number }, run: ClientRun) =>
  `${(result.events / result.seconds).toFixed(0)} events/s (${result.seconds} s, peak RSS ${peakMiB(run).toFixed(0)} MiB)`;

async function seed(db: Knex, parties: Parameters<typeof seedTransfersInBulk>[3], from: number, to: number) {
  const started = performance.now();
  const events = await seedTransfersInBulk(db, from / 4, (to - from) / 4, parties);
  await db.raw("analyze events");
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `  seeded ${events} events in ${seconds.toFixed(1)} s (${(events / seconds).toFixed(0)} events/s)`,
  );
}

function report(small: Figures, big: Figures): void {
  const row = (name: string, a: number, b: number, unit: string, target: string) =>
    console.log(
      `  ${name.padEnd(22)} ${pad(a.toFixed(0), 9)} ${pad(b.toFixed(0), 9)} ${unit.padEnd(9)} ${pad((b / a).toFixed(2), 6)}   ${target}`,
    );
  console.log(
    `  ${"figure".padEnd(22)} ${pad(small.events, 9)} ${pad(big.events, 9)} ${"".padEnd(9)} ${pad("ratio", 6)}   target at ${big.events}`,
  );
  const met = (ok: boolean) => (ok ? "met" : "NOT met");
  row(
    "rebuild",
    small.rebuild.perSecond,
    big.rebuild.perSecond,
    "events/s",
    `≥ ${TARGETS.rebuildPerSecond}: ${met(big.rebuild.perSecond >= TARGETS.rebuildPerSecond)}`,
  );
  row(
    "rebuild peak RSS",
    small.rebuild.peakMiB,
    big.rebuild.peakMiB,
    "MiB",
    `≤ ${TARGETS.peakRssMiB}: ${met(big.rebuild.peakMiB <= TARGETS.peakRssMiB)}`,
  );
  if (!(small.replay && big.replay)) return;
  row("replay", small.replay.perSecond, big.replay.perSecond, "events/s", "");
  row(
    "replay peak RSS",
    small.replay.peakMiB,
    big.replay.peakMiB,
    "MiB",
    `≤ ${TARGETS.peakRssMiB}: ${met(big.replay.peakMiB <= TARGETS.peakRssMiB)}`,
  );
}

async function main(): Promise<void> {
  guard(TIME_LIMIT_MS, "bench/rebuild.ts");
  requireTime();
  if (EVENTS % 4 !== 0 || BASELINE_EVENTS % 4 !== 0 || BASELINE_EVENTS >= EVENTS)
    throw new Error(
      "BENCH_REBUILD_BASELINE_EVENTS < BENCH_REBUILD_EVENTS, both multiples of 4 (a transfer's life)",
    );
  const database = await benchDatabase();
  const root = tempRoot("handoff-bench-rebuild-");
  const db = openDatabase({ kind: "postgres", url: database.url });
  const env = { DATA_DIR: join(root.dir, "data"), DATABASE_URL: database.url };
  const parties = { accountId: randomUUID(), sender: randomUUID(), recipient: randomUUID() };
  try {
    console.log(
      `rebuild and replay at size: ${BASELINE_EVENTS} then ${EVENTS} events, PostgreSQL (load ${loadAverage()})`,
    );
    await migrate(db);
    await seed(db, parties, 0, BASELINE_EVENTS);
    const small = await measure(db, env, BASELINE_EVENTS);
    await seed(db, parties, BASELINE_EVENTS, EVENTS);
    const big = await measure(db, env, EVENTS);
    report(small, big);
    console.log(`  (load ${loadAverage()} at the end)`);
  } finally {
    await db.destroy();
    await database.drop();
    root.cleanup();
  }
}

await main();
