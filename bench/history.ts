/**
 * Cost as history grows (issue 7): on PostgreSQL (a fresh database), one account is seeded with
 * earlier transfers through the public API (many concurrent clients, enterprise plan, so no plan
 * limit stops it), then creates are timed on it and on a fresh account, alternating one by one in
 * the same run: their medians and ratio should be about 1.
 *
 *   npm run build && node --import tsx bench/history.ts
 *
 * Environment: BENCH_HISTORY_TRANSFERS (default 20000: the seeded history), BENCH_SEED_CLIENTS
 * (default 32), BENCH_HISTORY_CREATES (default 300: timed creates per account), BENCH_FILE_BYTES
 * (default 1024), BENCH_NODE_ARGS, BENCH_POSTGRES_URL. Seeding takes as long as the service needs:
 * the benchmark's own time limit grows with the count. On the core before issue 7 it slows down as
 * the history grows (every create folds the account's whole usage stream), so 20,000 takes hours
 * there; try it with a few hundred.
 */
import { cpus } from "node:os";
import { join } from "node:path";
import {
  benchDatabase,
  createAccount,
  createTransfer,
  guard,
  KeyPool,
  loadAverage,
  pad,
  percentileOf,
  registerAgent,
  type ServerChild,
  startHandoff,
  tempRoot,
} from "./support.js";

const HISTORY = Number(process.env.BENCH_HISTORY_TRANSFERS ?? 20_000);
const SEED_CLIENTS = Number(process.env.BENCH_SEED_CLIENTS ?? 32);
const CREATES = Number(process.env.BENCH_HISTORY_CREATES ?? 300);
const FILE_BYTES = Number(process.env.BENCH_FILE_BYTES ?? 1024);
/** Creates allowed per API key and minute (decisions 3.15): each key serves at most this many. */
const CREATES_PER_KEY = 60;
const SENDER = "bench-sender";
const RECIPIENT = "bench-recipient";
/** Time budget: setup and measurement, plus seeding at a pessimistic 10 transfers/s. */
const TIME_LIMIT_MS = 5 * 60 * 1000 + (HISTORY / 10) * 1000;

interface BenchAccount {
  label: string;
  pool: KeyPool;
}

async function benchAccount(server: ServerChild, label: string): Promise<BenchAccount> {
  const account = await createAccount(server.baseUrl, `bench-history-${label}@example.com`, "enterprise");
  await registerAgent(server.baseUrl, account.apiKey, SENDER);
  await registerAgent(server.baseUrl, account.apiKey, RECIPIENT);
  return { label, pool: new KeyPool(server.baseUrl, account.apiKey, CREATES_PER_KEY) };
}

/** A create refused with 409: concurrent creates on one account collided (the client may retry). */
class Conflict extends Error {}

/** One create on the account; its wall time in ms. */
async function timedCreate(server: ServerChild, account: BenchAccount): Promise<number> {
  const key = await account.pool.take();
  const start = performance.now();
  const created = await createTransfer(server.baseUrl, key, {
    sender: SENDER,
    recipient: RECIPIENT,
    size: FILE_BYTES,
    fileName: "history.bin",
  });
  const ms = performance.now() - start;
  if (created.status === 409) throw new Conflict();
  if (created.status !== 201)
    throw new Error(
      `create on the ${account.label} account: ${created.status} ${JSON.stringify(created.json)}`,
    );
  return ms;
}

/**
 * `count` creates on `account` by `clients` concurrent clients, with progress every 10 s. Creates
 * refused with 409 (concurrent changes to the account) are retried, and counted.
 */
async function seed(
  server: ServerChild,
  account: BenchAccount,
  count: number,
  clients: number,
): Promise<{ seconds: number; conflicts: number }> {
  // Retried conflicts use keys too: a fifth more than the creates.
  await account.pool.fill(Math.ceil((count * 1.2) / CREATES_PER_KEY) + clients);
  let conflicts = 0;
  const start = performance.now();
  let started = 0;
  let done = 0;
  const progress = setInterval(() => {
    const seconds = (performance.now() - start) / 1000;
    console.log(
      `  seeding: ${done} of ${count} in ${seconds.toFixed(0)} s (${(done / seconds).toFixed(1)}/s, ${conflicts} retried after 409)`,
    );
  }, 10_000);
  try {
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (started < count) {
          started++;
          for (;;) {
            try {
              await timedCreate(server, account);
              break;
            } catch (error) {
              if (!(error instanceof Conflict)) throw error;
              conflicts++;
            }
          }
          done++;
        }
      }),
    );
  } finally {
    clearInterval(progress);
  }
  return { seconds: (performance.now() - start) / 1000, conflicts };
}

const summary = (values: number[]) =>
  `median ${pad(percentileOf(values, 50).toFixed(1), 7)} ms, p90 ${pad(percentileOf(values, 90).toFixed(1), 7)} ms`;

async function main(): Promise<void> {
  guard(TIME_LIMIT_MS, "history");
  const temp = tempRoot("handoff-bench-history");
  const database = await benchDatabase();
  let server: ServerChild | null = null;
  console.log(
    `# history: create latency on an account with ${HISTORY} earlier transfers beside a fresh account, ` +
      `PostgreSQL (DATABASE_URL), ${CREATES} sequential creates each, alternating; node ${process.version}, ` +
      `${cpus().length} CPUs, load average ${loadAverage()}`,
  );
  try {
    server = await startHandoff({
      dataDir: join(temp.dir, "handoff"),
      env: { DATABASE_URL: database.url },
    });
    const seeded = await benchAccount(server, "seeded");
    const fresh = await benchAccount(server, "fresh");

    const { seconds, conflicts } = await seed(server, seeded, HISTORY, SEED_CLIENTS);
    console.log(
      `seeded ${HISTORY} transfers through POST /v1/transfers with ${SEED_CLIENTS} clients in ` +
        `${seconds.toFixed(1)} s (${(HISTORY / seconds).toFixed(1)}/s; ${conflicts} creates answered 409 ` +
        "for concurrent changes to the account, and retried)",
    );

    // Both pools ready before timing, so no key is minted between two timed creates; and both time
    // with new keys used alike. Left with the seeding's partly used keys, the seeded account took a
    // different key at nearly every create, each one's first look-up a database read the fresh
    // account's few keys did not need (ratio of the medians 1.14-1.20 then, 1.00-1.13 since).
    for (const account of [seeded, fresh]) {
      account.pool.retireUsed();
      await account.pool.fill(Math.ceil(CREATES / CREATES_PER_KEY) + 1);
    }
    const times = { seeded: [] as number[], fresh: [] as number[] };
    for (let i = 0; i < CREATES; i++) {
      const order = i % 2 === 0 ? [seeded, fresh] : [fresh, seeded];
      for (const account of order)
        times[account.label as "seeded" | "fresh"].push(await timedCreate(server, account));
    }
    const ratio = percentileOf(times.seeded, 50) / percentileOf(times.fresh, 50);
    console.log("");
    console.log(
      `Create latency (POST /v1/transfers, ${FILE_BYTES}-byte file, one at a time, ${CREATES} each)`,
    );
    const seededLabel = `account with ${HISTORY} earlier transfers`;
    console.log(`  ${seededLabel}  ${summary(times.seeded)}`);
    console.log(`  ${"fresh account".padEnd(seededLabel.length)}  ${summary(times.fresh)}`);
    console.log(
      `  ratio of the medians (history / fresh): ${ratio.toFixed(2)} (issue 7: the same cost, about 1)`,
    );
    console.log(`load average at the end: ${loadAverage()}`);
  } finally {
    await server?.stop();
    await database.drop();
    temp.cleanup();
  }
}

await main();
