/**
 * Small transfers per second: N concurrent clients, each looping create (POST /v1/transfers,
 * multipart with one 1 KiB file) → download (GET /v1/transfers/{id}/download, the JSON with the
 * signed link) → GET of the signed link, for a fixed duration against the real server.
 *
 *   npm run build && node --import tsx bench/small-transfers.ts
 *
 * Environment: BENCH_CLIENTS (default 32), BENCH_DURATION_S (default 20), BENCH_WARMUP_S (default 3),
 * BENCH_FILE_BYTES (default 1024), BENCH_ACCOUNTS (default 1: every client sends on one account;
 * N spreads the clients over N accounts), BENCH_NODE_ARGS (extra node flags for the service).
 *
 * Rate limits (decisions 3.15) are per API key and one-minute window: 60 creates and 30 download
 * calls. Each key here is used for at most 30 transfers in the whole run (so never more than 30
 * download calls in any window, whatever the window boundaries): the clients draw keys from a pool of
 * API keys of one scale-plan account (POST /v1/api-keys; unlimited keys on scale), sized from the
 * warm-up rate with a margin; should the pool run dry, a client mints a key on the spot (counted
 * and reported). The signed file link carries its own credential and is not rate limited.
 */
import http from "node:http";
import { cpus } from "node:os";
import { join } from "node:path";
import {
  createAccount,
  createApiKey,
  createTransfer,
  downloadLinks,
  guard,
  loadAverage,
  mb,
  pad,
  percentile,
  procCpuSeconds,
  procMemory,
  registerAgent,
  startHandoff,
  streamDownload,
  tempRoot,
} from "./support.js";

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 32);
const DURATION_MS = Number(process.env.BENCH_DURATION_S ?? 20) * 1000;
const WARMUP_MS = Number(process.env.BENCH_WARMUP_S ?? 3) * 1000;
const FILE_BYTES = Number(process.env.BENCH_FILE_BYTES ?? 1024);
const ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 1);
const BUCKET_MS = 5000;
/** The binding limit: 30 download calls per key and minute (creates allow 60). */
const TRANSFERS_PER_KEY = 30;
/** One key mints at most this many others: its default bucket allows 600 requests a minute. */
const MINTS_PER_CREATOR = 500;
const SENDER = "bench-sender";
const RECIPIENT = "bench-recipient";

const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS * 2 });

/** API keys, each handed out for at most TRANSFERS_PER_KEY transfers. */
class KeyPool {
  private readonly keys: { key: string; left: number }[] = [];
  private next = 0;
  private readonly creators: { key: string; minted: number }[];
  mintedDuringRun = 0;

  constructor(
    private readonly baseUrl: string,
    firstKey: string,
  ) {
    this.creators = [{ key: firstKey, minted: 0 }];
  }

  get size(): number {
    return this.keys.length;
  }

  private creator(): string {
    let creator = this.creators.find((c) => c.minted < MINTS_PER_CREATOR);
    if (!creator) {
      const fresh = this.keys.find((k) => !this.creators.some((c) => c.key === k.key));
      if (!fresh) throw new Error("no key left to mint keys with");
      creator = { key: fresh.key, minted: 0 };
      this.creators.push(creator);
    }
    creator.minted++;
    return creator.key;
  }

  private async mint(): Promise<string> {
    const key = await createApiKey(this.baseUrl, this.creator(), `bench-${this.keys.length}`);
    this.keys.push({ key, left: TRANSFERS_PER_KEY });
    return key;
  }

  /** Grows the pool to `count` keys, `parallel` requests at a time. */
  async fill(count: number, parallel = 8): Promise<void> {
    const workers = Array.from({ length: parallel }, async () => {
      while (this.keys.length < count) await this.mint();
    });
    await Promise.all(workers);
  }

  /** A key with budget left; mints one (and counts it) when the pool has run dry. */
  async take(): Promise<string> {
    for (let tried = 0; tried < this.keys.length; tried++) {
      const entry = this.keys[(this.next + tried) % this.keys.length];
      if (entry && entry.left > 0) {
        entry.left--;
        this.next = (this.next + tried + 1) % this.keys.length;
        return entry.key;
      }
    }
    this.mintedDuringRun++;
    const key = await this.mint();
    const entry = this.keys[this.keys.length - 1];
    if (entry) entry.left--;
    return key;
  }

  /** Retires every key used so far, so the measured run starts on fresh budgets. */
  retireUsed(): void {
    for (const entry of this.keys) if (entry.left < TRANSFERS_PER_KEY) entry.left = 0;
  }
}

interface Sample {
  create: number;
  link: number;
  file: number;
  pair: number;
}

interface Phase {
  samples: Sample[];
  /** Completion times (ms since the phase started), for the rate over time. */
  done: number[];
  failures: Map<string, number>;
  elapsedMs: number;
}

async function runPhase(baseUrl: string, pools: KeyPool[], durationMs: number): Promise<Phase> {
  const samples: Sample[] = [];
  const done: number[] = [];
  const failures = new Map<string, number>();
  const fail = (step: string, status: number | string) => {
    const label = `${step} ${status}`;
    failures.set(label, (failures.get(label) ?? 0) + 1);
  };
  const start = performance.now();
  const deadline = start + durationMs;

  async function client(index: number): Promise<void> {
    const pool = pools[index % pools.length];
    if (!pool) throw new Error("no key pool");
    while (performance.now() < deadline) {
      const key = await pool.take();
      const t0 = performance.now();
      try {
        const created = await createTransfer(baseUrl, key, {
          sender: SENDER,
          recipient: RECIPIENT,
          size: FILE_BYTES,
          fileName: "small.bin",
          agent,
        });
        const t1 = performance.now();
        if (created.status !== 201) {
          fail("create", created.status);
          continue;
        }
        const links = await downloadLinks(baseUrl, key, created.json.id);
        const t2 = performance.now();
        const url = links.json?.files?.[0]?.download_url;
        if (links.status !== 200 || !url) {
          fail("download", links.status);
          continue;
        }
        const file = await streamDownload(url, agent);
        const t3 = performance.now();
        if (file.status !== 200 || file.bytes !== FILE_BYTES) {
          fail("file", file.status);
          continue;
        }
        samples.push({ create: t1 - t0, link: t2 - t1, file: t3 - t2, pair: t3 - t0 });
        done.push(t3 - start);
      } catch (error) {
        fail("network", (error as Error).message);
      }
    }
  }

  await Promise.all(Array.from({ length: CLIENTS }, (_, index) => client(index)));
  return { samples, done, failures, elapsedMs: performance.now() - start };
}

function latencyLine(label: string, values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const ms = (p: number) => pad(percentile(sorted, p).toFixed(1), 7);
  const mean = sorted.reduce((sum, v) => sum + v, 0) / Math.max(1, sorted.length);
  return `  ${label.padEnd(38)} ${ms(50)} ${ms(90)} ${ms(99)} ${pad(mean.toFixed(1), 7)} ${ms(100)}`;
}

async function main(): Promise<void> {
  guard(9 * 60 * 1000, "small-transfers");
  const temp = tempRoot("handoff-bench-small");
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
  console.log(
    `# small transfers: ${CLIENTS} concurrent clients, ${DURATION_MS / 1000} s (after ${WARMUP_MS / 1000} s warm-up), ` +
      `${FILE_BYTES}-byte file; node ${process.version}, ${cpus().length} CPUs (load generator and server share them), ` +
      `load average ${loadAverage()}`,
  );
  const handoff = await startHandoff({ dataDir: join(temp.dir, "handoff"), nodeArgs });
  try {
    const pools: KeyPool[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const account = await createAccount(handoff.baseUrl, `bench-small-${i}@example.com`, "scale");
      await registerAgent(handoff.baseUrl, account.apiKey, SENDER);
      await registerAgent(handoff.baseUrl, account.apiKey, RECIPIENT);
      pools.push(new KeyPool(handoff.baseUrl, account.apiKey));
    }

    // Warm-up: JIT, connection pool, and a first measure of the rate to size the key pools.
    for (const pool of pools) await pool.fill(Math.max(Math.ceil(CLIENTS / ACCOUNTS), 40));
    const warm = await runPhase(handoff.baseUrl, pools, WARMUP_MS);
    const warmRate = warm.samples.length / (warm.elapsedMs / 1000);
    const needed =
      Math.ceil((warmRate * (DURATION_MS / 1000) * 2) / ACCOUNTS / TRANSFERS_PER_KEY) +
      Math.ceil(CLIENTS / ACCOUNTS);
    const fillStart = performance.now();
    let minted = 0;
    for (const pool of pools) {
      pool.retireUsed();
      pool.mintedDuringRun = 0;
      const before = pool.size;
      await pool.fill(before + needed);
      minted += pool.size - before;
    }
    console.log(
      `warm-up: ${warm.samples.length} transfers, ${warmRate.toFixed(0)}/s; key pools: ${minted} fresh API keys ` +
        `on ${ACCOUNTS} scale account${ACCOUNTS > 1 ? "s" : ""} minted in ${((performance.now() - fillStart) / 1000).toFixed(1)} s ` +
        `(each key used for at most ${TRANSFERS_PER_KEY} transfers)`,
    );

    const cpuBefore = procCpuSeconds(handoff.pid);
    const clientBefore = process.cpuUsage();
    const run = await runPhase(handoff.baseUrl, pools, DURATION_MS);
    const cpuAfter = procCpuSeconds(handoff.pid);
    const clientCpu = process.cpuUsage(clientBefore);
    const seconds = run.elapsedMs / 1000;
    const serverCpu = cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system;
    const failed = [...run.failures.values()].reduce((sum, n) => sum + n, 0);

    console.log("");
    console.log(
      `Throughput: ${(run.samples.length / seconds).toFixed(1)} transfers/s ` +
        `(${run.samples.length} create + download pairs in ${seconds.toFixed(1)} s, ${CLIENTS} clients), ` +
        `${failed} failed${failed ? `: ${[...run.failures].map(([k, n]) => `${k} ×${n}`).join(", ")}` : ""}`,
    );
    const keys = pools.reduce((sum, pool) => sum + pool.size, 0);
    const mintedDuringRun = pools.reduce((sum, pool) => sum + pool.mintedDuringRun, 0);
    console.log(
      `  rate limits: ${run.samples.length} transfers over ${keys} API keys, none used for more than ` +
        `${TRANSFERS_PER_KEY} transfers (the per-key download limit per minute); keys minted during the run: ${mintedDuringRun}`,
    );
    const buckets = Array.from({ length: Math.ceil(run.elapsedMs / BUCKET_MS) }, () => 0);
    for (const t of run.done) {
      const index = Math.min(buckets.length - 1, Math.floor(t / BUCKET_MS));
      buckets[index] = (buckets[index] ?? 0) + 1;
    }
    console.log(
      `  rate per ${BUCKET_MS / 1000} s over the run (transfers/s): ` +
        buckets
          .map((n, i) => (n / (Math.min(BUCKET_MS, run.elapsedMs - i * BUCKET_MS) / 1000)).toFixed(1))
          .join(", "),
    );
    console.log(
      `  CPU during the run: server ${((serverCpu / seconds) * 100).toFixed(0)}% of one core, ` +
        `load generator ${(((clientCpu.user + clientCpu.system) / 1e6 / seconds) * 100).toFixed(0)}%; ` +
        `server RSS now ${mb(procMemory(handoff.pid).rssKb)} MiB`,
    );
    console.log("");
    console.log(`Latency (ms)                               p50     p90     p99    mean     max`);
    console.log(
      latencyLine(
        "create   POST /v1/transfers (1 KiB)",
        run.samples.map((s) => s.create),
      ),
    );
    console.log(
      latencyLine(
        "download GET /v1/transfers/{id}/download",
        run.samples.map((s) => s.link),
      ),
    );
    console.log(
      latencyLine(
        "file     GET signed link",
        run.samples.map((s) => s.file),
      ),
    );
    console.log(
      latencyLine(
        "pair     create + download + file",
        run.samples.map((s) => s.pair),
      ),
    );
    console.log(`load average at the end: ${loadAverage()}`);
  } finally {
    await handoff.stop();
    temp.cleanup();
  }
}

await main();
