/**
 * What grows with history, and how fast (issue 34 part 4, docs/operations.md): BENCH_GROWTH_TRANSFERS
 * (default 10,000) one-time transfers through the real server (compiled, on a fresh PostgreSQL
 * database): each a create with `max_downloads` 1 and one 1 KiB file, the download call, and the
 * file through its signed link, as the small-transfer benchmark's pairs. The server runs with
 * TEST_CLOCK, so once the load is done the clock is moved past the files' purge time and every
 * transfer lives its whole life (created, downloaded out, its file purged). Then, with the
 * projections, the log's hasher and the purge caught up, each table's growth in
 * pg_total_relation_size (heap, indexes and TOAST) over the load, divided by the transfers.
 *
 * The baseline in the same run is the size of the same tables before the load (accounts, agents
 * and API keys made), so only what the transfers added is counted.
 *
 *   npm run bench -- growth
 *
 * Environment: BENCH_GROWTH_TRANSFERS (10000), BENCH_CLIENTS (16), BENCH_POSTGRES_URL.
 */
import pg from "pg";
import {
  ADMIN_TOKEN,
  benchDatabase,
  createAccount,
  createTransfer,
  downloadLinks,
  failureSummary,
  guard,
  KeyPool,
  keepAlive,
  loadAverage,
  pad,
  registerAgent,
  requestJson,
  StepFailure,
  sleep,
  startHandoff,
  streamDownload,
  tempRoot,
} from "./support.js";

const TRANSFERS = Number(process.env.BENCH_GROWTH_TRANSFERS ?? 10_000);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);
const FILE_BYTES = 1024;
/** Creates per API key: under the 60 a minute of decisions 3.15, and 30 download calls. */
const TRANSFERS_PER_KEY = 30;
const SENDER = "growth-sender";
const RECIPIENT = "growth-recipient";
/** Past the purge time of a downloaded-out transfer (its download links' lifetime). */
const ADVANCE_SECONDS = 2 * 3600;
const TIME_LIMIT_MS = 20 * 60 * 1000;

/** Where each table belongs in the report. */
const GROUPS: [string, RegExp][] = [
  ["event log", /^(events|event_streams)$/],
  ["transparency log", /^log_/],
  ["housekeeping", /^(idempotency_records|upload_leases|knex_migrations.*)$/],
];
const groupOf = (table: string) => GROUPS.find(([, pattern]) => pattern.test(table))?.[0] ?? "read models";

type Sizes = Map<string, { bytes: number; rows: number }>;

/** Every table of the database: total bytes (heap, indexes, TOAST) and live rows counted. */
async function tableSizes(pool: pg.Pool): Promise<Sizes> {
  const { rows } = await pool.query<{ name: string; bytes: string }>(
    `select c.relname as name, pg_total_relation_size(c.oid)::text as bytes
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relkind = 'r' and n.nspname = 'public'`,
  );
  const sizes: Sizes = new Map();
  for (const { name, bytes } of rows) {
    const counted = await pool.query<{ n: string }>(`select count(*)::text as n from "${name}"`);
    sizes.set(name, { bytes: Number(bytes), rows: Number(counted.rows[0]?.n) });
  }
  return sizes;
}

/** The one value `sql` selects, as a number; throws when it selects none. */
async function single(pool: pg.Pool, sql: string): Promise<number> {
  const { rows } = await pool.query<Record<string, unknown>>(sql);
  const [value] = Object.values(rows[0] ?? {});
  if (value === undefined) throw new Error(`no value from ${sql}`);
  return Number(value);
}

/** Waits until `done` holds, printing `what` once; throws after `ms`. */
async function until(what: string, ms: number, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what}: not done within ${ms / 1000} s`);
    await sleep(500);
  }
}

async function main(): Promise<void> {
  guard(TIME_LIMIT_MS, "growth");
  const database = await benchDatabase();
  const { dir, cleanup } = tempRoot("handoff-bench-growth-");
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  const server = await startHandoff({ dataDir: dir, env: { DATABASE_URL: database.url, TEST_CLOCK: "1" } });
  try {
    const account = await createAccount(server.baseUrl, "bench-growth@example.com", "scale");
    await registerAgent(server.baseUrl, account.apiKey, SENDER);
    await registerAgent(server.baseUrl, account.apiKey, RECIPIENT);
    const keys = new KeyPool(server.baseUrl, account.apiKey, TRANSFERS_PER_KEY);
    await keys.fill(Math.ceil(TRANSFERS / TRANSFERS_PER_KEY) + CLIENTS);
    const settled = async () =>
      (await single(pool, "select count(*) from events")) ===
      (await single(pool, "select size from log_state"));
    await until("the log's hasher before the load", 60_000, settled);
    const before = await tableSizes(pool);

    const began = performance.now();
    const failures = new Map<string, number>();
    let left = TRANSFERS;
    let transfers = 0;
    const oneTime = async () => {
      const key = await keys.take();
      const created = await createTransfer(server.baseUrl, key, {
        sender: SENDER,
        recipient: RECIPIENT,
        size: FILE_BYTES,
        agent: keepAlive,
        extraFields: { max_downloads: "1" },
      });
      if (created.status !== 201) throw new StepFailure(`create ${created.status}`);
      const links = await downloadLinks(server.baseUrl, key, created.json.id);
      const url = links.json?.files?.[0]?.download_url;
      if (links.status !== 200 || !url) throw new StepFailure(`download ${links.status}`);
      const file = await streamDownload(url, keepAlive);
      if (file.status !== 200 || file.bytes !== FILE_BYTES) throw new StepFailure(`file ${file.status}`);
    };
    const client = async () => {
      while (left-- > 0) {
        try {
          await oneTime();
          transfers++;
        } catch (error) {
          const label = error instanceof StepFailure ? error.label : (error as Error).message;
          failures.set(label, (failures.get(label) ?? 0) + 1);
        }
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, client));
    const seconds = (performance.now() - began) / 1000;
    console.log(
      `growth: ${transfers} one-time transfers in ${seconds.toFixed(0)} s, ${failureSummary(failures)}, load average ${loadAverage()}`,
    );

    const advanced = await requestJson("POST", `${server.baseUrl}/v1/admin/clock`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: { advance_seconds: ADVANCE_SECONDS },
    });
    if (advanced.status !== 200) throw new Error(`clock: ${advanced.status}`);
    await until("the purge", 600_000, async () => {
      const left = await single(pool, "select count(*) from transfers where not files_deleted");
      return left === 0;
    });
    await until("the projections and the log's hasher", 120_000, async () => {
      const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
      return /^handoff_projection_lag_events 0$/m.test(metrics) && (await settled());
    });
    const after = await tableSizes(pool);
    // What is live, apart from the space dead row versions hold (rows updated or tiles rewritten):
    // autovacuum makes that space reusable, but only a VACUUM FULL gives it back.
    await pool.query("vacuum full");
    report(before, after, await tableSizes(pool), transfers);
    const events = (after.get("events")?.rows ?? 0) - (before.get("events")?.rows ?? 0);
    console.log(`events per transfer: ${(events / transfers).toFixed(2)}`);
  } finally {
    await server.stop();
    await pool.end();
    await database.drop();
    cleanup();
  }
}

/** Per table: bytes per transfer as grown, then after VACUUM FULL (the baseline subtracted), rows added. */
function report(before: Sizes, after: Sizes, compacted: Sizes, transfers: number): void {
  const perTransfer = (sizes: Sizes, table: string) =>
    ((sizes.get(table)?.bytes ?? 0) - (before.get(table)?.bytes ?? 0)) / transfers;
  const lines = [...after.keys()]
    .map((table) => ({
      group: groupOf(table),
      table,
      grown: perTransfer(after, table),
      live: perTransfer(compacted, table),
      rows: (after.get(table)?.rows ?? 0) - (before.get(table)?.rows ?? 0),
    }))
    .filter((line) => line.grown !== 0 || line.rows !== 0)
    .sort((a, b) => a.group.localeCompare(b.group) || b.grown - a.grown);
  const row = (group: string, table: string, grown: string, live: string, rows: string) =>
    console.log(`${group.padEnd(18)}${table.padEnd(24)}${pad(grown, 10)}${pad(live, 19)}${pad(rows, 12)}`);
  const sum = (of: typeof lines, field: "grown" | "live") =>
    of.reduce((total, line) => total + line[field], 0).toFixed(0);
  row("group", "table", "bytes/tr", "after VACUUM FULL", "rows added");
  for (const group of new Set(lines.map((line) => line.group))) {
    const inGroup = lines.filter((line) => line.group === group);
    for (const line of inGroup)
      row(group, line.table, line.grown.toFixed(0), line.live.toFixed(0), String(line.rows));
    row(group, "(total)", sum(inGroup, "grown"), sum(inGroup, "live"), "");
  }
  row("all", "", sum(lines, "grown"), sum(lines, "live"), "");
}

await main();
