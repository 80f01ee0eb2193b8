/**
 * Shared pieces of the benchmarks: the real server (and the baseline server) as child processes,
 * RSS sampling from /proc, account/agent/key helpers, and streamed uploads and downloads that
 * never hold a large body in memory. Benchmarks print figures; they are not tests.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import {
  createReadStream,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import { freshPostgres } from "../test/support/fresh-postgres.js";
import { freePort } from "../test/support/server-process.js";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const KiB = 1024;
export const MiB = 1024 * KiB;
export const GiB = 1024 * MiB;
export const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef";

/** Variables that would point the server away from its embedded defaults (PGlite, filesystem blobs). */
const EXTERNAL_VARIABLES = [
  "DATABASE_URL",
  "EVENTSTORE_URL",
  "REDIS_URL",
  "S3_BUCKET",
  "S3_ENDPOINT",
  "S3_REGION",
  "S3_FORCE_PATH_STYLE",
  "SMTP_URL",
  "MAIL_FROM",
  "SERVER_KEY",
  "PUBLIC_BASE_URL",
  "TEST_CLOCK",
];

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A fresh directory under the OS temp dir; removed by `cleanup()`. Both servers of a run share it. */
export function tempRoot(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The 1, 5 and 15 minute load averages: other work on the machine skews every wall-clock figure. */
export function loadAverage(): string {
  return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
}

/** Flushes dirty pages, so that no run pays for the write-back of the one before it. */
export function syncDisks(): void {
  spawnSync("sync");
}

// ---------------------------------------------------------------------------------------------
// Child processes

const children = new Set<ServerChild>();

/** Kills every server child still running; installed on exit and on SIGINT/SIGTERM. */
function killChildren(): void {
  for (const child of children) child.killNow();
}
/** Databases created for this run and not yet dropped: an interrupted run drops them too. */
const databases = new Set<{ drop(): Promise<void> }>();

process.once("exit", killChildren);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    killChildren();
    void Promise.allSettled([...databases].map((database) => database.drop())).then(() => process.exit(130));
  });
}

export class ServerChild {
  private stderr = "";

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly baseUrl: string,
  ) {
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (text: string) => {
      this.stderr = (this.stderr + text).slice(-4000);
    });
    children.add(this);
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error(`${this.name} has no pid`);
    return this.child.pid;
  }

  static async start(
    name: string,
    args: string[],
    env: Record<string, string>,
    readyPath: string,
  ): Promise<ServerChild> {
    const port = await freePort();
    const childEnv: Record<string, string | undefined> = { ...process.env };
    for (const variable of EXTERNAL_VARIABLES) delete childEnv[variable];
    // The server logs every request (pino, synchronous): /dev/null costs it the least. For a look
    // at its log (or at --trace-gc output), BENCH_SERVER_LOG=<file> appends its stdout there.
    const log = process.env.BENCH_SERVER_LOG;
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...childEnv, ...env, PORT: String(port), HOST: "127.0.0.1" },
      stdio: ["ignore", log ? openSync(`${log}.${name}`, "a") : "ignore", "pipe"],
    });
    const server = new ServerChild(name, child, `http://127.0.0.1:${port}`);
    await server.waitReady(readyPath);
    return server;
  }

  private async waitReady(path: string, timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null)
        throw new Error(`${this.name} exited with ${this.child.exitCode}: ${this.stderr}`);
      try {
        const { status } = await requestJson("GET", `${this.baseUrl}${path}`);
        if (status === 200) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    throw new Error(`${this.name} not ready in time: ${this.stderr}`);
  }

  /** SIGTERM (the server closes cleanly), SIGKILL after 10 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) {
      children.delete(this);
      return;
    }
    const exited = once(this.child, "exit");
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
    children.delete(this);
  }

  killNow(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
  }
}

/** What every way of starting the server passes Node (test/integration/serve-flags.test.ts). */
export const SERVE_NODE_FLAG = "--v8-pool-size=0";

/** Node flags given in an environment variable, split on spaces. */
export function nodeArgsFrom(variable: string): string[] {
  return (process.env[variable] ?? "").split(" ").filter(Boolean);
}

/**
 * The real service, compiled (`npm run build`), as an operator runs it: `node --v8-pool-size=0
 * dist/src/cli.js serve`, as the Dockerfile and `npm start` do. BENCH_NODE_ARGS adds node flags to
 * every benchmark's service (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", which NODE_OPTIONS refuses).
 */
export function startHandoff(options: {
  dataDir: string;
  nodeArgs?: string[];
  env?: Record<string, string>;
}): Promise<ServerChild> {
  return ServerChild.start(
    "handoff",
    [
      SERVE_NODE_FLAG,
      ...(options.nodeArgs ?? []),
      ...nodeArgsFrom("BENCH_NODE_ARGS"),
      "dist/src/cli.js",
      "serve",
    ],
    { DATA_DIR: options.dataDir, ADMIN_TOKEN, ...(options.env ?? {}) },
    "/readyz",
  );
}

/** The plain node:http baseline of bench/baseline-server.ts, in its own process like the service. */
export function startBaseline(options: {
  dir: string;
  nodeArgs?: string[];
  env?: Record<string, string>;
}): Promise<ServerChild> {
  return ServerChild.start(
    "baseline",
    [...(options.nodeArgs ?? []), "--import", "tsx", "bench/baseline-server.ts"],
    { BASELINE_DIR: options.dir, ...(options.env ?? {}) },
    "/healthz",
  );
}

/** The plain node:http + pg service of bench/plain-crud-server.ts, on its own database. */
export function startPlainCrud(options: { dir: string; databaseUrl: string }): Promise<ServerChild> {
  return ServerChild.start(
    "plain-crud",
    ["--import", "tsx", "bench/plain-crud-server.ts"],
    { BASELINE_DIR: options.dir, DATABASE_URL: options.databaseUrl },
    "/healthz",
  );
}

/** The PostgreSQL server the benchmarks create their databases on (trust auth on this machine). */
export const POSTGRES_SERVER =
  process.env.BENCH_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** A fresh database on POSTGRES_SERVER for one server of one run; `drop()` removes it. */
export async function benchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const fresh = await freshPostgres(POSTGRES_SERVER, "handoff_bench");
  const database = {
    url: fresh.url,
    async drop() {
      databases.delete(database);
      await fresh.drop();
    },
  };
  databases.add(database);
  return database;
}

// ---------------------------------------------------------------------------------------------
// Memory

export interface ProcMemory {
  rssKb: number;
  hwmKb: number;
}

/** VmRSS and VmHWM (the kernel's own peak RSS) of a process, from /proc/<pid>/status. */
export function procMemory(pid: number): ProcMemory {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rssKb: field("VmRSS"), hwmKb: field("VmHWM") };
}

const TICKS_PER_SECOND = 100;

/** CPU seconds a process (all its threads) has used so far: user and system, from /proc/<pid>/stat. */
export function procCpuSeconds(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name may hold spaces: the fields start after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return {
    user: Number(fields[11]) / TICKS_PER_SECOND,
    system: Number(fields[12]) / TICKS_PER_SECOND,
  };
}

/** Resets the kernel's peak RSS (VmHWM) of a process to its current RSS; false where not allowed. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

export interface RssReport {
  samples: number;
  /** Largest gap between two samples: how well the 20 ms cadence was kept. */
  maxGapMs: number;
  peakKb: number;
  /** The kernel's peak over the same window (after resetPeakRss), or null where it cannot be reset. */
  kernelPeakKb: number | null;
}

/** Samples VmRSS every `intervalMs`; `stop()` gives the sampled peak and the kernel's peak. */
export class RssSampler {
  private timer: NodeJS.Timeout | null = null;
  private samples = 0;
  private peakKb = 0;
  private last = 0;
  private maxGapMs = 0;
  private readonly kernelReset: boolean;

  constructor(
    private readonly pid: number,
    private readonly intervalMs = 20,
  ) {
    this.kernelReset = resetPeakRss(pid);
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
  }

  private sample(): void {
    const now = performance.now();
    if (this.last !== 0) this.maxGapMs = Math.max(this.maxGapMs, now - this.last);
    this.last = now;
    const { rssKb } = procMemory(this.pid);
    this.samples++;
    if (rssKb > this.peakKb) this.peakKb = rssKb;
  }

  stop(): RssReport {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.sample();
    return {
      samples: this.samples,
      maxGapMs: Math.max(this.maxGapMs, this.intervalMs),
      peakKb: this.peakKb,
      kernelPeakKb: this.kernelReset ? procMemory(this.pid).hwmKb : null,
    };
  }
}

/**
 * Waits until a process's RSS has stopped moving: V8's memory reducer starts about 8 s after the
 * allocation rate drops and gives back a few hundred MiB the start-up left behind (PGlite's
 * initialisation above all), so RSS right after start-up is not the idle figure of a running
 * server, and V8 sizes its heap more tightly afterwards. Returns the settled RSS and the wait.
 */
export async function settleRss(
  pid: number,
  options: { minMs?: number; stableMs?: number; maxMs?: number; toleranceKb?: number } = {},
): Promise<{ rssKb: number; waitedMs: number; startKb: number }> {
  const { minMs = 12_000, stableMs = 6_000, maxMs = 45_000, toleranceKb = 2048 } = options;
  const start = performance.now();
  const startKb = procMemory(pid).rssKb;
  let reference = startKb;
  let since = start;
  for (;;) {
    await sleep(250);
    const now = performance.now();
    const { rssKb } = procMemory(pid);
    if (Math.abs(rssKb - reference) > toleranceKb) {
      reference = rssKb;
      since = now;
    }
    if ((now - start >= minMs && now - since >= stableMs) || now - start >= maxMs)
      return { rssKb, waitedMs: now - start, startKb };
  }
}

/** The node flags `forceFullGc` needs on the server it is used with: a heap snapshot on SIGUSR2, into `dir`. */
export const fullGcFlags = (dir: string) => ["--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${dir}`];

/**
 * Makes a server started with `fullGcFlags(dir)` run a full garbage collection, by having it write
 * a heap snapshot (which collects first), then deletes the snapshot. Until its first full GC a
 * freshly started service still holds its start-up garbage (a few hundred MiB from PGlite's
 * initialisation) and V8 sizes its heap from that; afterwards V8 sizes the heap from the live
 * ~40 MiB, which is the state a long-running server is in. Benchmarks measure that state.
 */
export async function forceFullGc(
  server: ServerChild,
  dir: string,
): Promise<{ beforeKb: number; afterKb: number }> {
  const snapshots = () => readdirSync(dir).filter((name) => name.endsWith(".heapsnapshot"));
  const beforeKb = procMemory(server.pid).rssKb;
  process.kill(server.pid, "SIGUSR2");
  const deadline = Date.now() + 60_000;
  while (snapshots().length === 0) {
    if (Date.now() > deadline) throw new Error(`${server.name} wrote no heap snapshot`);
    await sleep(50);
  }
  // The snapshot is written on the main thread: the server answers again once it is complete.
  await requestJson("GET", `${server.baseUrl}/healthz`);
  for (const name of snapshots()) rmSync(join(dir, name), { force: true });
  await sleep(1000);
  return { beforeKb, afterKb: await idleRssKb(server.pid) };
}

/** The idle RSS: the median of `count` samples `intervalMs` apart, taken while nothing is sent. */
export async function idleRssKb(pid: number, count = 25, intervalMs = 20): Promise<number> {
  const values: number[] = [];
  for (let i = 0; i < count; i++) {
    values.push(procMemory(pid).rssKb);
    await sleep(intervalMs);
  }
  return percentile(
    values.sort((a, b) => a - b),
    50,
  );
}

// ---------------------------------------------------------------------------------------------
// HTTP

/** Keep-alive connections for the small requests; large transfers use a connection of their own. */
export const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 256 });

export interface JsonAnswer<T = unknown> {
  status: number;
  json: T;
}

export async function requestJson<T = unknown>(
  method: string,
  url: string,
  options: { headers?: Record<string, string>; body?: unknown; agent?: http.Agent } = {},
): Promise<JsonAnswer<T>> {
  const payload = options.body === undefined ? null : Buffer.from(JSON.stringify(options.body));
  const headers: Record<string, string | number> = { ...(options.headers ?? {}) };
  if (payload) {
    headers["content-type"] = "application/json";
    headers["content-length"] = payload.length;
  }
  const response = await send(method, url, headers, options.agent ?? keepAlive, payload);
  const text = await readText(response);
  return { status: response.statusCode ?? 0, json: (text ? JSON.parse(text) : null) as T };
}

/** A small request with a raw body (the plain baseline's uploads); the answer is JSON. */
export async function requestBytes<T = unknown>(
  method: string,
  url: string,
  body: Buffer,
  options: { headers?: Record<string, string>; agent?: http.Agent } = {},
): Promise<JsonAnswer<T>> {
  const headers = {
    "content-type": "application/octet-stream",
    "content-length": body.length,
    ...(options.headers ?? {}),
  };
  const response = await send(method, url, headers, options.agent ?? keepAlive, body);
  const text = await readText(response);
  return { status: response.statusCode ?? 0, json: (text ? JSON.parse(text) : null) as T };
}

function send(
  method: string,
  url: string,
  headers: Record<string, string | number>,
  agent: http.Agent | false,
  body: Buffer | Readable | null,
): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, headers, agent }, resolve);
    request.on("error", reject);
    if (body === null) request.end();
    else if (Buffer.isBuffer(body)) request.end(body);
    else
      pipeline(body, request).catch((error: Error) => {
        request.destroy(error);
        reject(error);
      });
  });
}

async function readText(response: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export function assertStatus(what: string, answer: JsonAnswer, expected: number): void {
  if (answer.status !== expected)
    throw new Error(`${what}: expected ${expected}, got ${answer.status} ${JSON.stringify(answer.json)}`);
}

// ---------------------------------------------------------------------------------------------
// Accounts, agents, keys

export interface Account {
  accountId: string;
  apiKey: string;
}

/** Decisions section 2: POST /v1/admin/accounts with the admin token → the account and a first key. */
export async function createAccount(baseUrl: string, email: string, plan: string): Promise<Account> {
  const answer = await requestJson<{ account: { id: string }; api_key: { api_key: string } }>(
    "POST",
    `${baseUrl}/v1/admin/accounts`,
    { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: { email, plan } },
  );
  assertStatus("create account", answer, 201);
  return { accountId: answer.json.account.id, apiKey: answer.json.api_key.api_key };
}

/** A connected agent (one step, with a random X25519-sized public key). */
export async function registerAgent(baseUrl: string, apiKey: string, slug: string): Promise<void> {
  const answer = await requestJson("POST", `${baseUrl}/v1/agents/register`, {
    headers: { authorization: `Bearer ${apiKey}` },
    body: { agent_id: slug, name: slug, public_key: randomBytes(32).toString("base64") },
  });
  assertStatus(`register agent ${slug}`, answer, 201);
}

/** Another API key on the caller's account (POST /v1/api-keys). */
export async function createApiKey(baseUrl: string, apiKey: string, name: string): Promise<string> {
  const answer = await requestJson<{ api_key: string }>("POST", `${baseUrl}/v1/api-keys`, {
    headers: { authorization: `Bearer ${apiKey}` },
    body: { name },
  });
  assertStatus("create api key", answer, 201);
  return answer.json.api_key;
}

/** One key mints at most this many others: its default bucket allows 600 requests a minute. */
const MINTS_PER_CREATOR = 500;

/**
 * API keys of one account, each handed out at most `usesPerKey` times in the whole run, so that no
 * key ever meets its per-minute rate limit (decisions 3.15) whatever the window boundaries: the
 * benchmarks measure the service, not its limits. Keys are minted with POST /v1/api-keys (plans
 * with unlimited keys); should the pool run dry, `take` mints one on the spot and counts it.
 */
export class KeyPool {
  private readonly keys: { key: string; left: number }[] = [];
  private next = 0;
  private readonly creators: { key: string; minted: number }[];
  mintedDuringRun = 0;

  constructor(
    private readonly baseUrl: string,
    firstKey: string,
    readonly usesPerKey: number,
  ) {
    this.creators = [{ key: firstKey, minted: 0 }];
  }

  get size(): number {
    return this.keys.length;
  }

  /** Keys with budget left. */
  get fresh(): number {
    return this.keys.filter((k) => k.left > 0).length;
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
    this.keys.push({ key, left: this.usesPerKey });
    return key;
  }

  /** Mints keys until `count` of them have budget left, `parallel` requests at a time. */
  async fill(count: number, parallel = 8): Promise<number> {
    const before = this.keys.length;
    let wanted = count - this.fresh;
    const workers = Array.from({ length: parallel }, async () => {
      while (wanted-- > 0) await this.mint();
    });
    await Promise.all(workers);
    return this.keys.length - before;
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

  /** Retires every key used so far, so the next phase starts on fresh budgets. */
  retireUsed(): void {
    for (const entry of this.keys) if (entry.left < this.usesPerKey) entry.left = 0;
  }
}

// ---------------------------------------------------------------------------------------------
// Bodies generated on the fly

/** One MiB of random bytes, repeated to make any body: never more than this in memory. */
const CHUNK = randomBytes(MiB);

/**
 * `size` bytes, pushed as subarrays of the one random chunk, with backpressure; `framing` adds a
 * preamble and an epilogue around them. The pushes go straight to the request: no async iterator
 * or concatenation in between, so the client costs the same CPU per byte whatever it sends
 * (a multipart body framed through `Readable.from(async generator)` cost the client 5 times the CPU
 * of the raw one, on a machine where client and server share 2 cores).
 */
export function patternSource(
  size: number,
  chunkSize = MiB,
  framing: { head: Buffer; tail: Buffer } | null = null,
): Readable {
  return repeatedSource(CHUNK, size, Math.min(chunkSize, CHUNK.length), framing);
}

/** `size` bytes of `block` over and over, pushed `step` bytes at a time, with backpressure. */
function repeatedSource(
  block: Buffer,
  size: number,
  step: number,
  framing: { head: Buffer; tail: Buffer } | null = null,
): Readable {
  let left = size;
  let head = framing?.head ?? null;
  return new Readable({
    highWaterMark: step,
    read() {
      if (head) {
        const first = head;
        head = null;
        if (!this.push(first)) return;
      }
      while (left > 0) {
        const n = Math.min(step, left);
        left -= n;
        if (!this.push(block.subarray(0, n))) return;
      }
      if (framing) this.push(framing.tail);
      this.push(null);
    },
  });
}

const PROSE_WORDS =
  "the report lists quarterly figures for each region while agents follow the previous instructions in the " +
  "manual and the system prompts you for a PIN before any transfer starts or ends today";

/**
 * `size` bytes of English-like prose (ASCII, CRLF line ends) that uses the words of Shield's override
 * patterns harmlessly ("previous instructions", "system prompts", "you"): the worst case for its text
 * scan, which must search all of it and finds nothing. Seeded, so each call gives the same bytes.
 */
export function prose(size: number, seed = 1): Buffer {
  const words = PROSE_WORDS.split(" ");
  let text = "";
  for (let i = seed; text.length < size; i = (i * 1103515245 + 12345) >>> 0) {
    text += words[(i >>> 16) % words.length] + (i % 11 === 0 ? ".\r\n" : " ");
  }
  return Buffer.from(text.slice(0, size), "latin1");
}

/** `size` bytes of prose, pushed as subarrays of one generated MiB, with backpressure. */
export function proseSource(size: number): Readable {
  return repeatedSource(prose(MiB), size, MiB);
}

export interface MultipartBody {
  contentType: string;
  contentLength: number;
  /** The whole body in one buffer, for small sizes only. */
  buffer(): Buffer;
  /** The body as a stream: the file bytes are generated as they are sent. */
  stream(): Readable;
}

/** multipart/form-data with text `fields` and one file part named `fileField` of `size` bytes. */
export function multipartBody(
  fields: Record<string, string>,
  file: { field: string; name: string; size: number; type?: string },
): MultipartBody {
  const boundary = `----handoff-bench-${randomBytes(12).toString("hex")}`;
  let preamble = "";
  for (const [name, value] of Object.entries(fields)) {
    preamble += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  }
  preamble +=
    `--${boundary}\r\nContent-Disposition: form-data; name="${file.field}"; filename="${file.name}"\r\n` +
    `Content-Type: ${file.type ?? "application/octet-stream"}\r\n\r\n`;
  const head = Buffer.from(preamble);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    contentLength: head.length + file.size + tail.length,
    buffer: () => {
      if (file.size > 16 * MiB) throw new Error("buffer() is for small bodies");
      return Buffer.concat([head, CHUNK.subarray(0, file.size), tail]);
    },
    stream: () => patternSource(file.size, MiB, { head, tail }),
  };
}

// ---------------------------------------------------------------------------------------------
// Transfers

export interface Timed<T> {
  ms: number;
  value: T;
}

export async function timed<T>(work: () => Promise<T>): Promise<Timed<T>> {
  const start = performance.now();
  const value = await work();
  return { ms: performance.now() - start, value };
}

/**
 * Streams a body of `size` generated bytes with PUT/POST (or a tus PATCH, whose headers `extra`
 * adds); the answer's status, headers and text come back.
 */
export async function uploadRaw(
  url: string,
  size: number,
  method = "PUT",
  extra: Record<string, string> = {},
): Promise<{ status: number; text: string; headers: http.IncomingHttpHeaders }> {
  const headers = { "content-type": "application/octet-stream", "content-length": size, ...extra };
  const response = await send(method, url, headers, false, patternSource(size));
  return { status: response.statusCode ?? 0, text: await readText(response), headers: response.headers };
}

export interface TransferAnswer {
  id: string;
  files: { id?: string; name?: string; size: number }[];
}

/** POST /v1/transfers: multipart with sender, recipient, mode and one `files` part of `size` bytes. */
export async function createTransfer(
  baseUrl: string,
  apiKey: string,
  options: {
    sender: string;
    recipient: string;
    size: number;
    fileName?: string;
    agent?: http.Agent | false;
    extraFields?: Record<string, string>;
  },
): Promise<JsonAnswer<TransferAnswer>> {
  const body = multipartBody(
    {
      sender: options.sender,
      recipient: options.recipient,
      mode: "agent-to-agent",
      ...(options.extraFields ?? {}),
    },
    { field: "files", name: options.fileName ?? "bench.bin", size: options.size },
  );
  const headers = {
    authorization: `Bearer ${apiKey}`,
    "content-type": body.contentType,
    "content-length": body.contentLength,
  };
  const small = options.size <= 64 * KiB;
  const response = await send(
    "POST",
    `${baseUrl}/v1/transfers`,
    headers,
    options.agent ?? (small ? keepAlive : false),
    small ? body.buffer() : body.stream(),
  );
  const text = await readText(response);
  return { status: response.statusCode ?? 0, json: (text ? JSON.parse(text) : null) as TransferAnswer };
}

export interface DownloadAnswer {
  files: { download_url: string; size: number }[];
}

/** GET /v1/transfers/{id}/download: counts a download and returns the signed links. */
export function downloadLinks(
  baseUrl: string,
  apiKey: string,
  transferId: string,
): Promise<JsonAnswer<DownloadAnswer>> {
  return requestJson<DownloadAnswer>("GET", `${baseUrl}/v1/transfers/${transferId}/download`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
}

/** A sink that counts and discards what it is given: /dev/null without the system calls. */
export class DevNull extends Writable {
  bytes = 0;

  constructor() {
    super({ highWaterMark: MiB });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.bytes += chunk.length;
    callback();
  }

  override _writev(
    chunks: { chunk: Buffer; encoding: BufferEncoding }[],
    callback: (error?: Error | null) => void,
  ): void {
    for (const { chunk } of chunks) this.bytes += chunk.length;
    callback();
  }
}

/** GETs `url` and streams the body into a counting sink; the status and the byte count come back. */
export async function streamDownload(
  url: string,
  agent: http.Agent | false = false,
): Promise<{ status: number; bytes: number }> {
  const response = await send("GET", url, {}, agent, null);
  const sink = new DevNull();
  await pipeline(response, sink);
  return { status: response.statusCode ?? 0, bytes: sink.bytes };
}

// ---------------------------------------------------------------------------------------------
// Figures

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? NaN;
}

/** The SHA-256 of a file, read as a stream (hex). */
export async function fileSha256(path: string): Promise<string> {
  const hash = createHash("sha256");
  await pipeline(createReadStream(path), hash);
  return hash.digest("hex");
}

export const mibPerSecond = (bytes: number, ms: number) => bytes / MiB / (ms / 1000);
export const mb = (kb: number) => (kb / 1024).toFixed(1);
export const pad = (text: string | number, width: number) => String(text).padStart(width);
export const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");

/** A step of a measured loop that did not answer as it should: counted by `label`, not timed. */
export class StepFailure extends Error {
  constructor(readonly label: string) {
    super(label);
  }
}

export interface LoadPhase {
  /** Per completed iteration: the duration of each step, in ms. */
  samples: number[][];
  failures: Map<string, number>;
  elapsedMs: number;
}

/**
 * `clients` closed-loop clients, each calling `iteration` again as soon as it ends, until
 * `durationMs` has passed. An iteration returns its steps' durations; a StepFailure (or any
 * error) is counted under its label and the client goes on.
 */
export async function closedLoop(
  clients: number,
  durationMs: number,
  iteration: (client: number) => Promise<number[]>,
): Promise<LoadPhase> {
  const samples: number[][] = [];
  const failures = new Map<string, number>();
  const start = performance.now();
  const deadline = start + durationMs;
  async function client(index: number): Promise<void> {
    while (performance.now() < deadline) {
      try {
        samples.push(await iteration(index));
      } catch (error) {
        const label = error instanceof StepFailure ? error.label : `error ${(error as Error).message}`;
        failures.set(label, (failures.get(label) ?? 0) + 1);
      }
    }
  }
  await Promise.all(Array.from({ length: clients }, (_, index) => client(index)));
  return { samples, failures, elapsedMs: performance.now() - start };
}

/** "3 failed: create 429 ×2, …", or "0 failed". */
export function failureSummary(failures: Map<string, number>): string {
  const count = [...failures.values()].reduce((sum, n) => sum + n, 0);
  return count === 0
    ? "0 failed"
    : `${count} failed: ${[...failures].map(([k, n]) => `${k} ×${n}`).join(", ")}`;
}

/** Runs `steps` in order, timing each; returns their durations in ms. */
export async function timeSteps(steps: (() => Promise<void>)[]): Promise<number[]> {
  const durations: number[] = [];
  for (const step of steps) {
    const start = performance.now();
    await step();
    durations.push(performance.now() - start);
  }
  return durations;
}

/** The p-th percentile of unsorted values. */
export const percentileOf = (values: number[], p: number) =>
  percentile(
    [...values].sort((a, b) => a - b),
    p,
  );

/** Fails the process if it runs longer than `ms` (the benchmarks must stay well under 10 minutes). */
export function guard(ms: number, name: string): NodeJS.Timeout {
  const timer = setTimeout(() => {
    console.error(`${name}: still running after ${Math.round(ms / 1000)} s, giving up`);
    process.exit(2);
  }, ms);
  timer.unref();
  return timer;
}
