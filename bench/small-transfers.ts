/**
 * Small transfers (issue 7): closed-loop clients, each looping create (POST /v1/transfers,
 * multipart with one 1 KiB file) → download call (GET /v1/transfers/{id}/download) → GET of the
 * signed file link, for a fixed duration against the real server; beside the plain node:http + pg
 * service of bench/plain-crud-server.ts doing the same durable work on the same PostgreSQL, in the
 * same run, runs interleaved, best of N. Two setups: Handoff embedded (PGlite, the default) and
 * Handoff on PostgreSQL (DATABASE_URL, a fresh database per run); the baseline always on PostgreSQL.
 * On PostgreSQL, one client alone as well.
 *
 *   npm run build && node --import tsx bench/small-transfers.ts
 *
 * Environment: BENCH_RUNS (default 3: best of), BENCH_CLIENTS (default 32), BENCH_DURATION_S
 * (default 20), BENCH_WARMUP_S (default 3), BENCH_SINGLE_S (default 10: the one-client phase),
 * BENCH_FILE_BYTES (default 1024), BENCH_SETUPS (default "embedded,postgres"), BENCH_NODE_ARGS
 * (extra node flags for the service), BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres).
 *
 * Rate limits (decisions 3.15) are per API key and one-minute window: 60 creates and 30 download
 * calls. Each key here serves at most 30 transfers in the whole run (a KeyPool of one scale-plan
 * account, sized from the rate seen so far), so no request meets a limit. The signed file link
 * carries its own credential and is not rate limited.
 */
import http from "node:http";
import { cpus } from "node:os";
import { join } from "node:path";
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
  startHandoff,
  startPlainCrud,
  streamDownload,
  tempRoot,
  timeSteps,
  verdict,
} from "./support.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 32);
const DURATION_MS = Number(process.env.BENCH_DURATION_S ?? 20) * 1000;
const WARMUP_MS = Number(process.env.BENCH_WARMUP_S ?? 3) * 1000;
const SINGLE_MS = Number(process.env.BENCH_SINGLE_S ?? 10) * 1000;
const FILE_BYTES = Number(process.env.BENCH_FILE_BYTES ?? 1024);
const SETUPS = (process.env.BENCH_SETUPS ?? "embedded,postgres").split(",").filter(Boolean);
/** The binding limit: 30 download calls per key and minute (creates allow 60). */
const TRANSFERS_PER_KEY = 30;
const SENDER = "bench-sender";
const RECIPIENT = "bench-recipient";

/** Issue 7's targets. */
const TARGETS = {
  postgresShareOfBaseline: 0.5,
  postgresP99Ms: 150,
  embeddedPairsPerSecond: 150,
  embeddedP99Ms: 300,
  embeddedPeakRssMiB: 400,
  singleClientMedianMs: 10,
};

const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS * 2 });
const FILE = Buffer.alloc(FILE_BYTES, 7);

/** A server under test: how one client does one create → download call → file, and its process. */
interface Subject {
  label: string;
  server: ServerChild;
  /** Readies whatever `pair` needs for about `expected` pairs (API keys for Handoff). */
  prepare(expected: number): Promise<void>;
  /** One pair; resolves with the durations of its three steps. */
  pair(): Promise<number[]>;
}

/** Handoff's real API, on one scale-plan account with two connected agents. */
async function handoffSubject(server: ServerChild, label: string): Promise<Subject> {
  const account = await createAccount(server.baseUrl, `bench-small-${label}@example.com`, "scale");
  await registerAgent(server.baseUrl, account.apiKey, SENDER);
  await registerAgent(server.baseUrl, account.apiKey, RECIPIENT);
  const pool = new KeyPool(server.baseUrl, account.apiKey, TRANSFERS_PER_KEY);
  return {
    label,
    server,
    async prepare(expected) {
      pool.retireUsed();
      await pool.fill(Math.ceil((expected * 1.5) / TRANSFERS_PER_KEY) + CLIENTS);
    },
    async pair() {
      const key = await pool.take();
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

/** The plain service: raw body, one account named in a header. */
function plainSubject(server: ServerChild): Subject {
  return {
    label: "baseline",
    server,
    async prepare() {},
    async pair() {
      let id = "";
      let url = "";
      return timeSteps([
        async () => {
          const created = await requestBytes<{ id: string }>("POST", `${server.baseUrl}/transfers`, FILE, {
            headers: { "x-account": "bench" },
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
}

async function measure(subject: Subject, clients: number, durationMs: number): Promise<Figures> {
  const cpuBefore = procCpuSeconds(subject.server.pid);
  const phase: LoadPhase = await closedLoop(clients, durationMs, () => subject.pair());
  const cpuAfter = procCpuSeconds(subject.server.pid);
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
  };
}

const describe = (f: Figures) =>
  `${pad(f.pairsPerSecond.toFixed(1), 6)} pairs/s, p50 ${pad(f.p50.toFixed(1), 7)} ms, p99 ${pad(f.p99.toFixed(1), 7)} ms ` +
  `(steps p50 ${f.steps.map((ms) => ms.toFixed(1)).join(" / ")} ms; server CPU ${(f.serverCpuShare * 100).toFixed(0)}%; ${f.failures})`;

/** The run with the most pairs per second. */
const bestOf = (runs: Figures[]) =>
  runs.reduce((best, run) => (run.pairsPerSecond > best.pairsPerSecond ? run : best));

/** Alternates which subject goes first, so neither always runs on a machine the other just warmed. */
async function interleaved(
  subjects: [Subject, Subject],
  clients: number,
  durationMs: number,
  name: string,
): Promise<[Figures[], Figures[]]> {
  const results: [Figures[], Figures[]] = [[], []];
  for (let run = 1; run <= RUNS; run++) {
    const order = run % 2 === 1 ? [0, 1] : [1, 0];
    for (const index of order) {
      const subject = subjects[index as 0 | 1];
      const sofar = results[index as 0 | 1];
      const rate = sofar.length ? bestOf(sofar).pairsPerSecond : 200;
      await subject.prepare(rate * (durationMs / 1000));
      const figures = await measure(subject, clients, durationMs);
      sofar.push(figures);
      console.log(`  ${name} run ${run} ${subject.label.padEnd(9)} ${describe(figures)}`);
    }
  }
  return results;
}

interface SetupResult {
  setup: string;
  baseline: Figures;
  handoff: Figures;
  handoffPeakRssKb: number;
  baselinePeakRssKb: number;
  single: { baseline: Figures; handoff: Figures } | null;
}

async function runSetup(setup: string, dir: string): Promise<SetupResult> {
  const databases: { drop(): Promise<void> }[] = [];
  const servers: ServerChild[] = [];
  try {
    const baselineDb = await benchDatabase();
    databases.push(baselineDb);
    const plain = await startPlainCrud({ dir: join(dir, `${setup}-plain`), databaseUrl: baselineDb.url });
    servers.push(plain);
    const env: Record<string, string> = {};
    if (setup === "postgres") {
      const handoffDb = await benchDatabase();
      databases.push(handoffDb);
      env.DATABASE_URL = handoffDb.url;
    } else if (setup !== "embedded") throw new Error(`unknown setup ${setup}: embedded or postgres`);
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
    const server = await startHandoff({ dataDir: join(dir, `${setup}-handoff`), nodeArgs, env });
    servers.push(server);
    const subjects: [Subject, Subject] = [plainSubject(plain), await handoffSubject(server, setup)];

    console.log(
      `\n## ${setup}: Handoff ${setup === "embedded" ? "on PGlite (the default)" : "with DATABASE_URL"}, baseline on PostgreSQL`,
    );
    for (const subject of subjects) {
      await subject.prepare(200 * (WARMUP_MS / 1000));
      const warm = await measure(subject, CLIENTS, WARMUP_MS);
      console.log(`  warm-up       ${subject.label.padEnd(9)} ${describe(warm)}`);
    }
    const [baselineRuns, handoffRuns] = await interleaved(
      subjects,
      CLIENTS,
      DURATION_MS,
      `${CLIENTS} clients`,
    );
    let single: SetupResult["single"] = null;
    if (setup === "postgres") {
      const [b, h] = await interleaved(subjects, 1, SINGLE_MS, "1 client  ");
      const bestMedian = (runs: Figures[]) => runs.reduce((best, run) => (run.p50 < best.p50 ? run : best));
      single = { baseline: bestMedian(b), handoff: bestMedian(h) };
    }
    return {
      setup,
      baseline: bestOf(baselineRuns),
      handoff: bestOf(handoffRuns),
      handoffPeakRssKb: procMemory(server.pid).hwmKb,
      baselinePeakRssKb: procMemory(plain.pid).hwmKb,
      single,
    };
  } finally {
    for (const server of servers.reverse()) await server.stop();
    for (const database of databases) await database.drop();
  }
}

function report(results: SetupResult[]): void {
  console.log("");
  console.log(
    `Small transfers, best of ${RUNS} (the run with the most pairs/s; pair = create + download call + file, ms)`,
  );
  console.log("  setup      server      pairs/s     p50      p99   peak RSS   ratio (pairs/s)");
  for (const r of results) {
    const row = (label: string, f: Figures, rssKb: number, ratio: string) =>
      console.log(
        `  ${r.setup.padEnd(10)} ${label.padEnd(9)} ${pad(f.pairsPerSecond.toFixed(1), 9)} ${pad(f.p50.toFixed(1), 7)} ` +
          `${pad(f.p99.toFixed(1), 8)} ${pad(`${mb(rssKb)} MiB`, 10)}   ${ratio}`,
      );
    row("baseline", r.baseline, r.baselinePeakRssKb, "");
    row(
      "handoff",
      r.handoff,
      r.handoffPeakRssKb,
      `${((r.handoff.pairsPerSecond / r.baseline.pairsPerSecond) * 100).toFixed(1)} %`,
    );
    if (r.single) {
      console.log(
        `  ${r.setup.padEnd(10)} 1 client: median pair baseline ${r.single.baseline.p50.toFixed(1)} ms, ` +
          `handoff ${r.single.handoff.p50.toFixed(1)} ms (best of ${RUNS} medians)`,
      );
    }
  }
  console.log("");
  console.log("Targets (issue 7)");
  const target = (text: string, figure: string, ok: boolean) =>
    console.log(`  ${text.padEnd(58)} ${figure.padEnd(24)} ${verdict(ok)}`);
  for (const r of results) {
    if (r.setup === "postgres") {
      const share = r.handoff.pairsPerSecond / r.baseline.pairsPerSecond;
      target(
        `PostgreSQL, ${CLIENTS} clients: >= ${TARGETS.postgresShareOfBaseline * 100} % of the baseline's pairs/s`,
        `${(share * 100).toFixed(1)} %`,
        share >= TARGETS.postgresShareOfBaseline,
      );
      target(
        `PostgreSQL, ${CLIENTS} clients: p99 <= ${TARGETS.postgresP99Ms} ms`,
        `${r.handoff.p99.toFixed(1)} ms`,
        r.handoff.p99 <= TARGETS.postgresP99Ms,
      );
      if (r.single)
        target(
          `one client alone on PostgreSQL: median pair <= ${TARGETS.singleClientMedianMs} ms`,
          `${r.single.handoff.p50.toFixed(1)} ms`,
          r.single.handoff.p50 <= TARGETS.singleClientMedianMs,
        );
    } else {
      target(
        `embedded, ${CLIENTS} clients: >= ${TARGETS.embeddedPairsPerSecond} pairs/s`,
        `${r.handoff.pairsPerSecond.toFixed(1)} pairs/s`,
        r.handoff.pairsPerSecond >= TARGETS.embeddedPairsPerSecond,
      );
      target(
        `embedded, ${CLIENTS} clients: p99 <= ${TARGETS.embeddedP99Ms} ms`,
        `${r.handoff.p99.toFixed(1)} ms`,
        r.handoff.p99 <= TARGETS.embeddedP99Ms,
      );
      target(
        `embedded: server peak RSS (VmHWM) <= ${TARGETS.embeddedPeakRssMiB} MiB`,
        `${mb(r.handoffPeakRssKb)} MiB`,
        r.handoffPeakRssKb <= TARGETS.embeddedPeakRssMiB * 1024,
      );
    }
  }
}

async function main(): Promise<void> {
  const phases = SETUPS.length * (RUNS * 2 * DURATION_MS + 2 * WARMUP_MS) + RUNS * 2 * SINGLE_MS;
  guard(phases + 5 * 60 * 1000, "small-transfers");
  const temp = tempRoot("handoff-bench-small");
  console.log(
    `# small transfers: ${CLIENTS} closed-loop clients, ${DURATION_MS / 1000} s per run, best of ${RUNS} interleaved, ` +
      `${FILE_BYTES}-byte file; setups ${SETUPS.join(", ")}; node ${process.version}, ${cpus().length} CPUs ` +
      `(load generator and servers share them), load average ${loadAverage()}`,
  );
  try {
    const results: SetupResult[] = [];
    for (const setup of SETUPS) results.push(await runSetup(setup, temp.dir));
    report(results);
    console.log(`load average at the end: ${loadAverage()}`);
  } finally {
    temp.cleanup();
  }
}

await main();
