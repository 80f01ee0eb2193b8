/**
 * The offline check of an audit export (issue 32: `handoff log verify` of a 100,000-entry export in
 * ≤ 10 s), on PostgreSQL (a fresh database):
 *
 * One account with BENCH_EXPORT_ENTRIES (default 100,000) entries of history (transfer lives
 * appended through the event store, bench/seed-account.ts), the log hashed and signed past them,
 * then `GET /v1/audit/export` saved to a file: the checkpoint and every entry with its inclusion
 * proof. Timed, each as a process of its own under /usr/bin/time (wall, CPU, peak RSS), best of
 * BENCH_RUNS: `handoff log verify FILE --vkey VKEY` of the Node CLI (dist) and of the Python client
 * (`/usr/bin/python3 -m handoff`). Baseline in the same run: the same file read and each line parsed
 * as JSON, nothing checked (what any reader of the export pays).
 *
 *   npm run -s build:server && npm run bench -- verify
 *
 * Environment: BENCH_EXPORT_ENTRIES (100000), BENCH_RUNS (3), BENCH_POSTGRES_URL.
 */
import { createWriteStream, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream } from "node:stream/web";
import { openDatabase } from "../src/db/database.js";
import { type ClientRun, requireTime, timedCommand, timedHandoff } from "./client-process.js";
import { seedAccountHistory } from "./seed-account.js";
import {
  benchDatabase,
  guard,
  loadAverage,
  pad,
  ROOT,
  requestJson,
  type ServerChild,
  sleep,
  startHandoff,
  tempRoot,
} from "./support.js";

const ENTRIES = Number(process.env.BENCH_EXPORT_ENTRIES ?? 100_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const TARGET_SECONDS = 10;
const PYTHON = ["/usr/bin/python3", "-m", "handoff"];
const PYTHON_ENV = { PYTHONPATH: join(ROOT, "packages/python/src") };

/** Waits until a signed checkpoint covers `size` leaves (the hasher catches up in the background). */
async function checkpointCovering(server: ServerChild, size: number): Promise<void> {
  const started = Date.now();
  for (;;) {
    const answer = await fetch(`${server.baseUrl}/v1/log/checkpoint`);
    const treeSize = answer.status === 200 ? Number((await answer.text()).split("\n")[1]) : 0;
    if (treeSize >= size) break;
    if (Date.now() - started > 10 * 60_000) throw new Error(`no checkpoint covered ${size} leaves in 10 min`);
    await sleep(500);
  }
  console.log(`  a checkpoint covered the log ${((Date.now() - started) / 1000).toFixed(1)} s after seeding`);
}

async function saveExport(server: ServerChild, apiKey: string, path: string): Promise<number> {
  const answer = await fetch(`${server.baseUrl}/v1/audit/export`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  if (answer.status !== 200 || !answer.body) throw new Error(`export answered ${answer.status}`);
  await pipeline(Readable.fromWeb(answer.body as ReadableStream), createWriteStream(path));
  // The first line is the checkpoint; each other one an entry.
  return readFileSync(path, "utf8").trimEnd().split("\n").length - 1;
}

/** The baseline: the export read and each of its lines parsed, nothing checked; seconds. */
function parseOnly(path: string): number {
  const started = performance.now();
  let lines = 0;
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line) {
      JSON.parse(line);
      lines++;
    }
  }
  if (lines === 0) throw new Error("an empty export");
  return (performance.now() - started) / 1000;
}

async function bestOf(run: () => Promise<ClientRun>): Promise<ClientRun> {
  const runs: ClientRun[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await run());
  return runs.reduce((best, next) => (next.ms < best.ms ? next : best));
}

const describe = (name: string, run: ClientRun) =>
  `  ${pad(name, 22)} ${pad((run.ms / 1000).toFixed(2), 6)} s (CPU ${(run.userSeconds + run.systemSeconds).toFixed(2)} s, peak RSS ${(run.peakKb / 1024).toFixed(0)} MiB)  target ≤ ${TARGET_SECONDS} s: ${run.ms / 1000 <= TARGET_SECONDS ? "met" : "NOT met"}`;

async function main(): Promise<void> {
  guard(30 * 60_000, "export-verify");
  requireTime();
  const database = await benchDatabase();
  const root = tempRoot("handoff-bench-export-");
  const db = openDatabase({ kind: "postgres", url: database.url });
  let server: ServerChild | null = null;
  try {
    console.log(`audit export verified offline: ${ENTRIES} entries, best of ${RUNS} (load ${loadAverage()})`);
    server = await startHandoff({ dataDir: join(root.dir, "data"), env: { DATABASE_URL: database.url } });
    const account = await seedAccountHistory(server, db, Math.ceil(ENTRIES / 4), {
      email: "bench-export@example.com",
      plan: "enterprise",
    });
    const events = await db("events").count({ n: "*" });
    await checkpointCovering(server, Number(events[0]?.n));
    const vkey = (await requestJson<{ vkey: string }>("GET", `${server.baseUrl}/v1/log/key`)).json.vkey;
    const file = join(root.dir, "export.ndjson");
    const entries = await saveExport(server, account.apiKey, file);
    await server.stop();
    server = null;
    console.log(`  the export: ${entries} entries, ${(statSync(file).size / 2 ** 20).toFixed(1)} MiB`);

    const args = ["log", "verify", file, "--vkey", vkey];
    const node = await bestOf(() => timedHandoff(args, {}));
    const python = await bestOf(() => timedCommand(PYTHON, args, PYTHON_ENV));
    const baseline = Math.min(...Array.from({ length: RUNS }, () => parseOnly(file)));
    console.log(describe("handoff log verify", node));
    console.log(describe("python -m handoff", python));
    console.log(`  ${pad("baseline: parse only", 22)} ${pad(baseline.toFixed(2), 6)} s (in this process)`);
    console.log(`load average at the end: ${loadAverage()}`);
  } finally {
    await server?.stop();
    await db.destroy();
    await database.drop();
    root.cleanup();
  }
}

await main();
