/**
 * Small transfers (issues 7 and 21): closed-loop clients, each looping create (POST /v1/transfers,
 * multipart with one 1 KiB file) → download call (GET /v1/transfers/{id}/download) → GET of the
 * signed file link, for a fixed duration against the real server; beside the plain node:http + pg
 * service of bench/plain-crud-server.ts doing the same durable work on the same PostgreSQL, in the
 * same run, runs interleaved, best of N. Two setups: Handoff embedded (PGlite, the default) and
 * Handoff on PostgreSQL (DATABASE_URL, a fresh database per run); the baseline always on PostgreSQL.
 *
 * Each setup is measured under several loads: every `max_downloads` of BENCH_MAX_DOWNLOADS (with 1
 * each pair's download is the transfer's last: it is marked downloaded, its file scheduled for
 * deletion and its storage released, on both servers) times every account spread of
 * BENCH_ACCOUNTS (the clients split evenly over that many accounts, each with its own books).
 * Each load runs on accounts of its own. On PostgreSQL, one client alone as well, for each
 * `max_downloads`, and one more run of each load in which Handoff's events are timed into its
 * signed checkpoints (that observer polls the database and the service, so the run's own pairs/s
 * never count).
 *
 *   npm run build && node --import tsx bench/small-transfers.ts
 *
 * Environment: BENCH_RUNS (default 3: best of), BENCH_CLIENTS (default 32), BENCH_DURATION_S
 * (default 10), BENCH_WARMUP_S (default 3), BENCH_SINGLE_S (default 5: the one-client phase),
 * BENCH_FILE_BYTES (default 1024), BENCH_SETUPS (default "embedded,postgres"), BENCH_MAX_DOWNLOADS
 * (default "1,10"), BENCH_ACCOUNTS (default "1,4"), BENCH_EMBEDDED_ACCOUNTS (default "1": the
 * spreads measured on the embedded setup), BENCH_NODE_ARGS (extra node flags for the service),
 * BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres).
 *
 * Rate limits (decisions 3.15) are per API key and one-minute window: 60 creates and 30 download
 * calls. Each key here serves at most 30 transfers in the whole run (a KeyPool per scale-plan
 * account, sized from the rate seen so far), so no request meets a limit. The signed file link
 * carries its own credential and is not rate limited.
 *
 * Grown mode (issue 34 part 1), BENCH_GROWN (e.g. "150000" or "150000,1000000"): for each size, on
 * PostgreSQL only, both servers are first given a history of that many one-time transfers made alike
 * (created with max_downloads 1, downloaded once, done), then measured as above (the one-client
 * phase and the observed run are left out). The history is made by a fast path, not by the load:
 * Handoff's transfer lives are appended through its event store (bench/seed-events.ts, four events
 * each, on an account of their own) while the server runs, which projects them, and the measurement
 * waits until its projections and the transparency log's hasher have caught up; the baseline's
 * finished rows are inserted in bulk into its tables (downloaded out, their purge scheduled, on an
 * account of their own). Both databases are then VACUUM ANALYZEd alike, and the server checkpointed so
 * that the growing's writes are on disk before the first run. The default loads in this
 * mode are max_downloads 1 and 10 on one account.
 */
import http from "node:http";
import { cpus } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { openDatabase } from "../src/db/database.js";
import { seedAccountHistory } from "./seed-account.js";
import {
  benchDatabase,
  closedLoop,
  createAccount,
  createTransfer,
  downloadLinks,
  failureSummary,
  guard,
  KeyPool,
  type LoadPhase,
  loadAverage,
  mb,
  pad,
  percentileOf,
  procCpuSeconds,
  procMemory,
  registerAgent,
  requestBytes,
  requestJson,
  type ServerChild,
  StepFailure,
  sleep,
  startHandoff,
  startPlainCrud,
  streamDownload,
  tempRoot,
  timeSteps,
  verdict,
} from "./support.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 32);
const DURATION_MS = Number(process.env.BENCH_DURATION_S ?? 10) * 1000;
const WARMUP_MS = Number(process.env.BENCH_WARMUP_S ?? 3) * 1000;
const SINGLE_MS = Number(process.env.BENCH_SINGLE_S ?? 5) * 1000;
const FILE_BYTES = Number(process.env.BENCH_FILE_BYTES ?? 1024);
const list = (value: string | undefined, fallback: string) => (value ?? fallback).split(",").filter(Boolean);
const SETUPS = list(process.env.BENCH_GROWN ? "postgres" : process.env.BENCH_SETUPS, "embedded,postgres");
const MAX_DOWNLOADS = list(process.env.BENCH_MAX_DOWNLOADS, "1,10").map(Number);
const SPREADS = list(process.env.BENCH_ACCOUNTS, process.env.BENCH_GROWN ? "1" : "1,4").map(Number);
const EMBEDDED_SPREADS = list(process.env.BENCH_EMBEDDED_ACCOUNTS, "1").map(Number);
/** Sizes of history (transfers) to grow both servers' databases to before measuring; none: fresh. */
const GROWN = list(process.env.BENCH_GROWN, "").map(Number);
const GROWN_MODE = GROWN.length > 0;
/** The binding limit: 30 download calls per key and minute (creates allow 60). */
const TRANSFERS_PER_KEY = 30;
const SENDER = "bench-sender";
const RECIPIENT = "bench-recipient";

/** Issue 21's targets (issue 7's, raised). */
const TARGETS = {
  postgresShareOfBaseline: 0.8,
  postgresP99Ms: 150,
  embeddedMaxDownloads: 1,
  embeddedPairsPerSecond: 300,
  embeddedP99Ms: 300,
  embeddedPeakRssMiB: 400,
  singleClientMedianMs: 6,
};

const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS * 2 });
const FILE = Buffer.alloc(FILE_BYTES, 7);

/** What a run's clients do: transfers allowing `maxDownloads`, sent from `accounts` accounts. */
interface Load {
  maxDownloads: number;
  accounts: number;
}
const loadName = (load: Load) => `max_downloads ${load.maxDownloads}, ${load.accounts} account(s)`;
const loadsOf = (spreads: number[]): Load[] =>
  MAX_DOWNLOADS.flatMap((maxDownloads) => spreads.map((accounts) => ({ maxDownloads, accounts })));

/** A server under test: how one client does one create → download call → file, and its process. */
interface Subject {
  label: string;
  server: ServerChild;
  /** Readies whatever `pair` needs for about `expected` pairs under `load` (API keys for Handoff). */
  prepare(load: Load, expected: number): Promise<void>;
  /** One pair of client number `client`; resolves with the durations of its three steps. */
  pair(load: Load, client: number): Promise<number[]>;
  /**
   * Measures something of the server while a load runs for `durationMs` (Handoff on PostgreSQL:
   * how long its events wait for a signed checkpoint); resolves with a line of figures, or "".
   * It costs the server work of its own, so it runs only in a run of its own (observedRun).
   */
  observe?(durationMs: number): Promise<string>;
}

/** One scale-plan account with two connected agents, and keys enough for its share of a run. */
class Sender {
  private constructor(private readonly pool: KeyPool) {}

  static async open(baseUrl: string, email: string): Promise<Sender> {
    const account = await createAccount(baseUrl, email, "scale");
    await registerAgent(baseUrl, account.apiKey, SENDER);
    await registerAgent(baseUrl, account.apiKey, RECIPIENT);
    return new Sender(new KeyPool(baseUrl, account.apiKey, TRANSFERS_PER_KEY));
  }

  async prepare(expected: number, clients: number): Promise<void> {
    this.pool.retireUsed();
    await this.pool.fill(Math.ceil((expected * 1.5) / TRANSFERS_PER_KEY) + clients);
  }

  take(): Promise<string> {
    return this.pool.take();
  }
}

/** Committed events counted this often while a load runs, each count a sample of checkpoint latency. */
const LATENCY_SAMPLE_MS = 100;
const CHECKPOINT_POLL_MS = 25;

/**
 * Issue 32's second target, measured from outside: every LATENCY_SAMPLE_MS the events committed so
 * far are counted in the database, and the sample's latency is the time until GET /v1/log/checkpoint
 * signs a tree of at least that many leaves (an upper bound for each event counted: it was committed
 * before the count).
 */
async function checkpointLatency(baseUrl: string, databaseUrl: string, durationMs: number): Promise<string> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  const waiting: { at: number; events: number }[] = [];
  const latencies: number[] = [];
  const end = Date.now() + durationMs;
  const signedSize = async () => {
    const answer = await fetch(`${baseUrl}/v1/log/checkpoint`);
    return answer.status === 200 ? Number((await answer.text()).split("\n")[1]) : 0;
  };
  const counting = (async () => {
    while (Date.now() < end) {
      const at = Date.now();
      const { rows } = await pool.query<{ n: string }>("select count(*)::text as n from events");
      waiting.push({ at, events: Number(rows[0]?.n) });
      await new Promise((resolve) => setTimeout(resolve, LATENCY_SAMPLE_MS));
    }
  })();
  const settleUntil = end + 5000;
  while (Date.now() < settleUntil && (Date.now() < end || waiting.length > 0)) {
    const size = await signedSize();
    const now = Date.now();
    while (waiting.length > 0 && (waiting[0]?.events ?? 0) <= size)
      latencies.push(now - (waiting.shift()?.at ?? now));
    await new Promise((resolve) => setTimeout(resolve, CHECKPOINT_POLL_MS));
  }
  await counting;
  await pool.end();
  if (latencies.length === 0) return "no checkpoint signed";
  return `event → signed checkpoint p50 ${percentileOf(latencies, 50).toFixed(0)} ms, p99 ${percentileOf(latencies, 99).toFixed(0)} ms (${latencies.length} samples${waiting.length > 0 ? `, ${waiting.length} never signed` : ""})`;
}

/** Handoff's real API; each load on accounts of its own, the clients split evenly over them. */
function handoffSubject(server: ServerChild, label: string, databaseUrl: string | null): Subject {
  const senders = new Map<string, Promise<Sender[]>>();
  const sendersOf = (load: Load) => {
    const name = `${load.maxDownloads}-${load.accounts}`;
    let opened = senders.get(name);
    if (!opened) {
      opened = Promise.all(
        Array.from({ length: load.accounts }, (_, i) =>
          Sender.open(server.baseUrl, `bench-small-${label}-${name}-${i}@example.com`),
        ),
      );
      senders.set(name, opened);
    }
    return opened;
  };
  return {
    label,
    server,
    ...(databaseUrl
      ? { observe: (durationMs: number) => checkpointLatency(server.baseUrl, databaseUrl, durationMs) }
      : {}),
    async prepare(load, expected) {
      const accounts = await sendersOf(load);
      const clientsEach = Math.ceil(CLIENTS / load.accounts);
      for (const sender of accounts) await sender.prepare(expected / load.accounts, clientsEach);
    },
    async pair(load, client) {
      const sender = (await sendersOf(load))[client % load.accounts] as Sender;
      const key = await sender.take();
      let id = "";
      let url = "";
      return timeSteps([
        async () => {
          const created = await createTransfer(server.baseUrl, key, {
            sender: SENDER,
            recipient: RECIPIENT,
            size: FILE_BYTES,
            fileName: "small.bin",
            agent,
            extraFields: { max_downloads: String(load.maxDownloads) },
          });
          if (created.status !== 201) throw new StepFailure(`create ${created.status}`);
          id = created.json.id;
        },
        async () => {
          const links = await downloadLinks(server.baseUrl, key, id);
          url = links.json?.files?.[0]?.download_url ?? "";
          if (links.status !== 200 || !url) throw new StepFailure(`download ${links.status}`);
        },
        () => fetchFile(url),
      ]);
    },
  };
}

/** The plain service: raw body, the account and max_downloads named in headers. */
function plainSubject(server: ServerChild): Subject {
  return {
    label: "baseline",
    server,
    async prepare() {},
    async pair(load, client) {
      let id = "";
      let url = "";
      return timeSteps([
        async () => {
          const created = await requestBytes<{ id: string }>("POST", `${server.baseUrl}/transfers`, FILE, {
            headers: {
              "x-account": `bench-${load.maxDownloads}-${load.accounts}-${client % load.accounts}`,
              "x-max-downloads": String(load.maxDownloads),
            },
            agent,
          });
          if (created.status !== 201) throw new StepFailure(`create ${created.status}`);
          id = created.json.id;
        },
        async () => {
          const links = await requestJson<{ url: string }>(
            "GET",
            `${server.baseUrl}/transfers/${id}/download`,
            {
              agent,
            },
          );
          if (links.status !== 200) throw new StepFailure(`download ${links.status}`);
          url = links.json.url;
        },
        () => fetchFile(url),
      ]);
    },
  };
}

async function fetchFile(url: string): Promise<void> {
  const file = await streamDownload(url, agent);
  if (file.status !== 200 || file.bytes !== FILE_BYTES)
    throw new StepFailure(`file ${file.status} (${file.bytes} bytes)`);
}

interface Figures {
  pairsPerSecond: number;
  p50: number;
  p99: number;
  /** Median of each step: create, download call, file. */
  steps: number[];
  failures: string;
  serverCpuShare: number;
  /** What the subject observed meanwhile (Subject.observe), or "". */
  observed: string;
}

/**
 * One run of `load` against `subject`. With `observing`, the subject's observer runs alongside
 * (it queries the database and the service itself, so such a run's pairs/s never count).
 */
async function measure(
  subject: Subject,
  load: Load,
  clients: number,
  durationMs: number,
  observing = false,
): Promise<Figures> {
  const cpuBefore = procCpuSeconds(subject.server.pid);
  const observation = (observing && subject.observe?.(durationMs)) || Promise.resolve("");
  const phase: LoadPhase = await closedLoop(clients, durationMs, (client) => subject.pair(load, client));
  const cpuAfter = procCpuSeconds(subject.server.pid);
  const observed = await observation;
  const seconds = phase.elapsedMs / 1000;
  const pairs = phase.samples.map((steps) => steps.reduce((sum, ms) => sum + ms, 0));
  return {
    pairsPerSecond: phase.samples.length / seconds,
    p50: percentileOf(pairs, 50),
    p99: percentileOf(pairs, 99),
    steps: [0, 1, 2].map((i) =>
      percentileOf(
        phase.samples.map((s) => s[i] ?? 0),
        50,
      ),
    ),
    failures: failureSummary(phase.failures),
    serverCpuShare: (cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system) / seconds,
    observed,
  };
}

const describe = (f: Figures) =>
  `${pad(f.pairsPerSecond.toFixed(1), 6)} pairs/s, p50 ${pad(f.p50.toFixed(1), 7)} ms, p99 ${pad(f.p99.toFixed(1), 7)} ms ` +
  `(steps p50 ${f.steps.map((ms) => ms.toFixed(1)).join(" / ")} ms; server CPU ${(f.serverCpuShare * 100).toFixed(0)}%; ${f.failures})` +
  (f.observed ? `; ${f.observed}` : "");

/** The run with the most pairs per second. */
const bestOf = (runs: Figures[]) =>
  runs.reduce((best, run) => (run.pairsPerSecond > best.pairsPerSecond ? run : best));

/** The run with the lowest median pair. */
const bestMedian = (runs: Figures[]) => runs.reduce((best, run) => (run.p50 < best.p50 ? run : best));

/** Alternates which subject goes first, so neither always runs on a machine the other just warmed. */
async function interleaved(
  subjects: [Subject, Subject],
  load: Load,
  clients: number,
  durationMs: number,
): Promise<[Figures[], Figures[]]> {
  const results: [Figures[], Figures[]] = [[], []];
  for (let run = 1; run <= RUNS; run++) {
    const order = run % 2 === 1 ? [0, 1] : [1, 0];
    for (const index of order) {
      const subject = subjects[index as 0 | 1];
      const sofar = results[index as 0 | 1];
      const rate = sofar.length ? bestOf(sofar).pairsPerSecond : 400;
      await subject.prepare(load, rate * (durationMs / 1000));
      const figures = await measure(subject, load, clients, durationMs);
      sofar.push(figures);
      console.log(
        `  ${pad(clients, 2)} client(s), ${loadName(load)}, run ${run} ${subject.label.padEnd(9)} ${describe(figures)}`,
      );
    }
  }
  return results;
}

/** One more run of `load` with the subject's observer on (none without an observer). */
async function observedRun(subject: Subject, load: Load): Promise<string> {
  if (!subject.observe) return "";
  await subject.prepare(load, 400 * (DURATION_MS / 1000));
  const figures = await measure(subject, load, CLIENTS, DURATION_MS, true);
  console.log(
    `  ${pad(CLIENTS, 2)} client(s), ${loadName(load)}, observed ${subject.label.padEnd(9)} ${describe(figures)}`,
  );
  return figures.observed;
}

/** One load's best runs, beside each other. */
interface Measured {
  load: Load;
  baseline: Figures;
  handoff: Figures;
  /** What Handoff's observer saw in a run of its own under the same load (Subject.observe), or "". */
  observed?: string;
}

interface SetupResult {
  setup: string;
  /** Transfers of history both servers were given before measuring (0: fresh databases). */
  grown: number;
  loads: Measured[];
  /** One client alone, per max_downloads (PostgreSQL only): the best median of each side. */
  single: Measured[];
  handoffPeakRssKb: number;
  baselinePeakRssKb: number;
}

/**
 * The baseline's history: `transfers` finished one-time transfers of an account of their own, as
 * its COUNT_DOWNLOAD leaves them (downloaded out, purge scheduled, storage given back), one second
 * apart from 2026-11-01 as bench/seed-events.ts dates Handoff's.
 */
async function growPlain(databaseUrl: string, transfers: number): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    await pool.query(
      "insert into accounts (id, storage_used, storage_quota) values ('history', 0, $1) on conflict do nothing",
      [2 ** 40],
    );
    await pool.query(
      `insert into transfers (id, account_id, size, downloads, max_downloads, status, purge_after, created_at)
       select gen_random_uuid(), 'history', $2, 1, 1, 'downloaded', at + interval '15 minutes', at
         from generate_series(0, $1 - 1) as i,
              lateral (select timestamptz '2026-11-01T00:00:00Z' + i * interval '1 second' as at) as t`,
      [transfers, FILE_BYTES],
    );
  } finally {
    await pool.end();
  }
}

/** Until the transparency log's hasher has signed a tree over every event now in the log. */
async function hasherCaughtUp(baseUrl: string, databaseUrl: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    const { rows } = await pool.query<{ n: string }>("select count(*)::text as n from events");
    const events = Number(rows[0]?.n);
    for (;;) {
      const answer = await fetch(`${baseUrl}/v1/log/checkpoint`);
      const size = answer.status === 200 ? Number((await answer.text()).split("\n")[1]) : 0;
      if (size >= events) return;
      await sleep(500);
    }
  } finally {
    await pool.end();
  }
}

/** Runs `sql` alone on a connection of its own to `databaseUrl`. */
async function runAlone(databaseUrl: string, sql: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    await pool.query(sql);
  } finally {
    await pool.end();
  }
}

/** Gives both servers `transfers` transfers of history (see the header); prints how long each took. */
async function grow(plainUrl: string, handoff: ServerChild, handoffUrl: string, transfers: number) {
  let started = Date.now();
  await growPlain(plainUrl, transfers);
  console.log(
    `  baseline: ${transfers} finished transfers inserted in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  started = Date.now();
  const db = openDatabase({ kind: "postgres", url: handoffUrl });
  try {
    await seedAccountHistory(handoff, db, transfers, {
      email: "bench-history@example.com",
      plan: "enterprise",
    });
  } finally {
    await db.destroy();
  }
  await hasherCaughtUp(handoff.baseUrl, handoffUrl);
  console.log(
    `  handoff: ${transfers} transfer lives appended, projected and hashed in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  started = Date.now();
  // Fresh statistics on both sides; then the growing's writes to disk, once for the whole server:
  // left to the next timed checkpoint, they were written back (and every page first touched after
  // it logged whole) while the first runs were measured, Handoff's and the baseline's unevenly.
  await Promise.all([runAlone(plainUrl, "vacuum analyze"), runAlone(handoffUrl, "vacuum analyze")]);
  await runAlone(handoffUrl, "checkpoint");
  console.log(
    `  both databases vacuumed and analyzed, then checkpointed, in ${((Date.now() - started) / 1000).toFixed(1)} s (load ${loadAverage()})`,
  );
}

async function runSetup(setup: string, dir: string, grown = 0): Promise<SetupResult> {
  const databases: { drop(): Promise<void> }[] = [];
  const servers: ServerChild[] = [];
  try {
    const baselineDb = await benchDatabase();
    databases.push(baselineDb);
    const plain = await startPlainCrud({
      dir: join(dir, `${setup}-${grown}-plain`),
      databaseUrl: baselineDb.url,
    });
    servers.push(plain);
    const env: Record<string, string> = {};
    if (setup === "postgres") {
      const handoffDb = await benchDatabase();
      databases.push(handoffDb);
      env.DATABASE_URL = handoffDb.url;
    } else if (setup !== "embedded") throw new Error(`unknown setup ${setup}: embedded or postgres`);
    const server = await startHandoff({ dataDir: join(dir, `${setup}-${grown}-handoff`), env });
    servers.push(server);
    const subjects: [Subject, Subject] = [
      plainSubject(plain),
      handoffSubject(server, setup, env.DATABASE_URL ?? null),
    ];

    console.log(
      `\n## ${setup}: Handoff ${setup === "embedded" ? "on PGlite (the default)" : "with DATABASE_URL"}, baseline on PostgreSQL` +
        (grown ? `, both grown by ${grown} transfers of history` : ""),
    );
    if (grown) await grow(baselineDb.url, server, env.DATABASE_URL as string, grown);
    const warmLoad: Load = { maxDownloads: 10, accounts: 1 };
    for (const subject of subjects) {
      await subject.prepare(warmLoad, 400 * (WARMUP_MS / 1000));
      const warm = await measure(subject, warmLoad, CLIENTS, WARMUP_MS);
      console.log(`  warm-up ${subject.label.padEnd(9)} ${describe(warm)}`);
    }
    const loads: Measured[] = [];
    for (const load of loadsOf(setup === "postgres" ? SPREADS : EMBEDDED_SPREADS)) {
      const [baselineRuns, handoffRuns] = await interleaved(subjects, load, CLIENTS, DURATION_MS);
      loads.push({
        load,
        baseline: bestOf(baselineRuns),
        handoff: bestOf(handoffRuns),
        observed: GROWN_MODE ? "" : await observedRun(subjects[1], load),
      });
    }
    const single: Measured[] = [];
    if (setup === "postgres" && !GROWN_MODE) {
      for (const maxDownloads of MAX_DOWNLOADS) {
        const load = { maxDownloads, accounts: 1 };
        const [b, h] = await interleaved(subjects, load, 1, SINGLE_MS);
        single.push({ load, baseline: bestMedian(b), handoff: bestMedian(h) });
      }
    }
    return {
      setup,
      grown,
      loads,
      single,
      handoffPeakRssKb: procMemory(server.pid).hwmKb,
      baselinePeakRssKb: procMemory(plain.pid).hwmKb,
    };
  } finally {
    for (const server of servers.reverse()) await server.stop();
    for (const database of databases) await database.drop();
  }
}

/** The setup's name in the report, with the history it was grown by. */
const labelOf = (r: SetupResult) => (r.grown ? `pg+${r.grown}` : r.setup);
const targetSetupName = (r: SetupResult) =>
  r.grown ? `PostgreSQL after ${r.grown} transfers of history` : "PostgreSQL";

const shareOf = (m: Measured) => m.handoff.pairsPerSecond / m.baseline.pairsPerSecond;

function report(results: SetupResult[]): void {
  console.log("");
  console.log(
    `Small transfers, ${CLIENTS} clients, best of ${RUNS} (the run with the most pairs/s; pair = create + download call + file, ms)`,
  );
  console.log(
    "  setup      max_dl accounts | baseline pairs/s    p99 | handoff pairs/s    p50      p99 | ratio",
  );
  for (const r of results) {
    for (const m of r.loads) {
      console.log(
        `  ${labelOf(r).padEnd(10)} ${pad(m.load.maxDownloads, 6)} ${pad(m.load.accounts, 8)} | ` +
          `${pad(m.baseline.pairsPerSecond.toFixed(1), 16)} ${pad(m.baseline.p99.toFixed(1), 6)} | ` +
          `${pad(m.handoff.pairsPerSecond.toFixed(1), 15)} ${pad(m.handoff.p50.toFixed(1), 6)} ${pad(m.handoff.p99.toFixed(1), 8)} | ` +
          `${pad((shareOf(m) * 100).toFixed(1), 5)} %`,
      );
      if (m.observed) console.log(`  ${"".padEnd(26)} | ${m.observed} (a run of its own, not counted above)`);
    }
    console.log(
      `  ${labelOf(r).padEnd(10)} peak RSS (VmHWM): handoff ${mb(r.handoffPeakRssKb)} MiB, baseline ${mb(r.baselinePeakRssKb)} MiB`,
    );
    for (const m of r.single) {
      console.log(
        `  ${labelOf(r).padEnd(10)} 1 client, max_downloads ${m.load.maxDownloads}: median pair baseline ` +
          `${m.baseline.p50.toFixed(1)} ms, handoff ${m.handoff.p50.toFixed(1)} ms (best of ${RUNS} medians)`,
      );
    }
  }
  console.log("");
  console.log(GROWN_MODE ? "Targets (issue 34, grown alike)" : "Targets (issue 21)");
  const target = (text: string, figure: string, ok: boolean) =>
    console.log(`  ${text.padEnd(76)} ${figure.padEnd(16)} ${verdict(ok)}`);
  for (const r of results) {
    if (r.setup === "postgres") {
      for (const m of r.loads) {
        const share = shareOf(m);
        target(
          `${targetSetupName(r)}, ${loadName(m.load)}: >= ${TARGETS.postgresShareOfBaseline * 100} % of the baseline's pairs/s`,
          `${(share * 100).toFixed(1)} %`,
          share >= TARGETS.postgresShareOfBaseline,
        );
        target(
          `${targetSetupName(r)}, ${loadName(m.load)}: p99 <= ${TARGETS.postgresP99Ms} ms`,
          `${m.handoff.p99.toFixed(1)} ms`,
          m.handoff.p99 <= TARGETS.postgresP99Ms,
        );
      }
      for (const m of r.single)
        target(
          `PostgreSQL, one client alone, max_downloads ${m.load.maxDownloads}: median pair <= ${TARGETS.singleClientMedianMs} ms`,
          `${m.handoff.p50.toFixed(1)} ms`,
          m.handoff.p50 <= TARGETS.singleClientMedianMs,
        );
    } else {
      for (const m of r.loads.filter((m) => m.load.maxDownloads === TARGETS.embeddedMaxDownloads)) {
        target(
          `embedded, ${loadName(m.load)}: >= ${TARGETS.embeddedPairsPerSecond} pairs/s`,
          `${m.handoff.pairsPerSecond.toFixed(1)} pairs/s`,
          m.handoff.pairsPerSecond >= TARGETS.embeddedPairsPerSecond,
        );
        target(
          `embedded, ${loadName(m.load)}: p99 <= ${TARGETS.embeddedP99Ms} ms`,
          `${m.handoff.p99.toFixed(1)} ms`,
          m.handoff.p99 <= TARGETS.embeddedP99Ms,
        );
      }
      target(
        `embedded: server peak RSS (VmHWM) <= ${TARGETS.embeddedPeakRssMiB} MiB`,
        `${mb(r.handoffPeakRssKb)} MiB`,
        r.handoffPeakRssKb <= TARGETS.embeddedPeakRssMiB * 1024,
      );
    }
  }
}

async function main(): Promise<void> {
  const setupsRun = GROWN_MODE ? GROWN.map(() => "postgres") : SETUPS;
  const loadsRun = setupsRun.flatMap((setup) => loadsOf(setup === "postgres" ? SPREADS : EMBEDDED_SPREADS));
  const singles = SETUPS.includes("postgres") && !GROWN_MODE ? MAX_DOWNLOADS.length : 0;
  const observedRuns = SETUPS.includes("postgres") && !GROWN_MODE ? loadsOf(SPREADS).length : 0;
  /** Growing: about 4 s per 1,000 transfers on this machine, allowed twice that. */
  const growing = GROWN.reduce((sum, size) => sum + size * 8, 0);
  const phases =
    (loadsRun.length * RUNS * 2 + observedRuns) * DURATION_MS +
    setupsRun.length * 2 * WARMUP_MS +
    growing +
    singles * RUNS * 2 * SINGLE_MS;
  guard(phases + 5 * 60 * 1000, "small-transfers");
  const temp = tempRoot("handoff-bench-small");
  console.log(
    `# small transfers: ${CLIENTS} closed-loop clients, ${DURATION_MS / 1000} s per run, best of ${RUNS} interleaved, ` +
      `${FILE_BYTES}-byte file; setups ${SETUPS.join(", ")}; max_downloads ${MAX_DOWNLOADS.join(", ")}; ` +
      `accounts ${SPREADS.join(", ")} (embedded ${EMBEDDED_SPREADS.join(", ")}); node ${process.version}, ` +
      `${cpus().length} CPUs (load generator and servers share them), load average ${loadAverage()}`,
  );
  if (GROWN_MODE)
    console.log(
      `# grown mode: history of ${GROWN.join(", ")} transfers made by the fast path before measuring, not by the load ` +
        "(Handoff: transfer lives appended through its event store, then projected and hashed by the running server; " +
        "baseline: finished rows inserted in bulk); both databases VACUUM ANALYZEd, then a CHECKPOINT; PostgreSQL only",
    );
  try {
    const results: SetupResult[] = [];
    if (GROWN_MODE) for (const size of GROWN) results.push(await runSetup("postgres", temp.dir, size));
    else for (const setup of SETUPS) results.push(await runSetup(setup, temp.dir));
    report(results);
    console.log(`load average at the end: ${loadAverage()}`);
  } finally {
    temp.cleanup();
  }
}

await main();
