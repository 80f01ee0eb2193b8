import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ADMIN_TOKEN, randomPublicKey } from "../support/app.js";
import { freePort } from "../support/server-process.js";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What a request came to: an answer (status and parsed body), or a connection cut without one. */
export type Outcome = { status: number; body: Record<string, unknown>; headers: Headers } | { cut: string };

export const isCut = (outcome: Outcome): outcome is { cut: string } => "cut" in outcome;

/** One API call that never throws: its answer, or what cut it off. */
export async function call(
  baseUrl: string,
  method: string,
  path: string,
  key: string,
  body?: unknown,
): Promise<Outcome> {
  try {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : {}, headers: response.headers };
  } catch (error) {
    return { cut: String((error as Error).cause ?? error) };
  }
}

/** An account on `plan` with the agents alice and bob; answers its API key. */
export async function accountWithAgents(baseUrl: string, plan = "scale"): Promise<string> {
  const created = await call(baseUrl, "POST", "/v1/admin/accounts", ADMIN_TOKEN, {
    email: `faults-${randomBytes(4).toString("hex")}@example.com`,
    plan,
  });
  if (isCut(created) || created.status !== 201) throw new Error(`account: ${JSON.stringify(created)}`);
  const apiKey = (created.body.api_key as { api_key: string }).api_key;
  for (const agent of ["alice", "bob"]) {
    const registered = await call(baseUrl, "POST", "/v1/agents/register", apiKey, {
      agent_id: agent,
      public_key: randomPublicKey(),
    });
    if (isCut(registered) || registered.status !== 201)
      throw new Error(`register ${agent}: ${JSON.stringify(registered)}`);
  }
  return apiKey;
}

export interface UploadOptions {
  /** Bytes per write. */
  chunk?: number;
  /** Awaited before each file after the first (and before the end): lets a test act mid-upload. */
  betweenFiles?: (index: number) => Promise<void>;
}

/**
 * POST /v1/transfers from alice to bob as a multipart body written chunk by chunk (a real
 * streaming client, not one buffer). Resolves with the answer, or with `cut` when the connection
 * ended without one; never rejects.
 */
export function upload(
  baseUrl: string,
  apiKey: string,
  files: Buffer[],
  options: UploadOptions = {},
): Promise<Outcome> {
  const chunk = options.chunk ?? 256 * 1024;
  const boundary = `faults${randomBytes(8).toString("hex")}`;
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: Outcome) => {
      if (!settled) resolve(outcome);
      settled = true;
    };
    const req = request(`${baseUrl}/v1/transfers`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${apiKey}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
      },
    });
    req.setTimeout(60_000, () => req.destroy(new Error("no answer within 60 s")));
    req.on("error", (error) => settle({ cut: error.message }));
    req.on("response", (response) => {
      const parts: Buffer[] = [];
      response.on("data", (part: Buffer) => parts.push(part));
      response.on("error", (error) => settle({ cut: `answer cut: ${error.message}` }));
      response.on("end", () => {
        const text = Buffer.concat(parts).toString("utf8");
        let body: Record<string, unknown>;
        try {
          body = JSON.parse(text);
        } catch {
          return settle({ cut: `answer ${response.statusCode} is not JSON: ${text.slice(0, 200)}` });
        }
        const headers = new Headers();
        for (const [name, value] of Object.entries(response.headers)) {
          if (typeof value === "string") headers.set(name, value);
        }
        settle({ status: response.statusCode ?? 0, body, headers });
      });
    });
    // Once the server has answered, the rest of the body is not needed: stop writing it.
    const answered = () => settled || req.destroyed;
    const write = (data: string | Buffer) =>
      new Promise<void>((done) => (answered() || req.write(data) ? done() : req.once("drain", done)));
    void (async () => {
      for (const [name, value] of [
        ["sender", "alice"],
        ["recipient", "bob"],
        ["mode", "agent-to-agent"],
      ]) {
        await write(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
      }
      for (const [index, file] of files.entries()) {
        if (index > 0) await options.betweenFiles?.(index);
        await write(
          `--${boundary}\r\nContent-Disposition: form-data; name="files"; filename="f${index}.bin"\r\n` +
            "Content-Type: application/octet-stream\r\n\r\n",
        );
        for (let at = 0; at < file.length && !answered(); at += chunk)
          await write(file.subarray(at, at + chunk));
        await write("\r\n");
      }
      if (!answered()) req.end(`--${boundary}--\r\n`);
    })();
  });
}

/** Every file of a transfer through its signed download links, in order; throws on any failure. */
export async function downloadAll(baseUrl: string, apiKey: string, transferId: string): Promise<Buffer[]> {
  const links = await call(baseUrl, "GET", `/v1/transfers/${transferId}/download`, apiKey);
  if (isCut(links) || links.status !== 200)
    throw new Error(`download ${transferId}: ${JSON.stringify(links)}`);
  const files = links.body.files as { download_url: string }[];
  const contents: Buffer[] = [];
  for (const file of files) {
    const response = await fetch(file.download_url);
    if (response.status !== 200)
      throw new Error(`${file.download_url}: ${response.status} ${await response.text()}`);
    contents.push(Buffer.from(await response.arrayBuffer()));
  }
  return contents;
}

/** Files anywhere under `dir` (none when it does not exist), relative to it. */
export function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1));
}

/** Runs `what` until `stop` is aborted, recording each outcome; for load beside a fault. */
export async function loop(stop: AbortSignal, what: () => Promise<void>): Promise<void> {
  while (!stop.aborted) await what();
}

/** Whether this process may run commands as the postgres user and mount file systems. */
const isRoot = process.getuid?.() === 0;

/** PostgreSQL's server binaries (initdb, pg_ctl), newest version first, or null. */
export function postgresBinaries(): string | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((version) => existsSync(join(root, version, "bin", "pg_ctl")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], "bin") : null;
}

export const privatePostgresSkipReason = (): string => {
  if (!postgresBinaries()) return "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin";
  if (!isRoot) return "running initdb as the postgres user needs root";
  if (spawnSync("id", ["postgres"]).status !== 0) return "no postgres user";
  return "";
};

/**
 * A PostgreSQL cluster of the test's own (initdb + pg_ctl as the postgres user, on a free port),
 * so it can be stopped and started without touching the machine's shared server.
 */
export class PrivatePostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly bin: string,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async create(): Promise<PrivatePostgres> {
    const bin = postgresBinaries();
    if (!bin) throw new Error("no PostgreSQL binaries");
    const dir = mkdtempSync(join(tmpdir(), "handoff-faults-pg-"));
    chmodSync(dir, 0o755);
    execFileSync("chown", ["postgres:postgres", dir]);
    const cluster = new PrivatePostgres(dir, await freePort(), bin);
    cluster.asPostgres("initdb", ["-D", cluster.dataDir, "-A", "trust", "-U", "postgres", "--no-sync"]);
    await cluster.start();
    return cluster;
  }

  private get dataDir(): string {
    return join(this.dir, "data");
  }

  private asPostgres(tool: string, args: string[]): void {
    execFileSync("runuser", ["-u", "postgres", "--", join(this.bin, tool), ...args], {
      stdio: ["ignore", "ignore", "pipe"],
      timeout: 120_000,
    });
  }

  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    this.asPostgres("pg_ctl", [
      "-D",
      this.dataDir,
      "-o",
      options,
      "-l",
      join(this.dir, "log"),
      "-w",
      "start",
    ]);
  }

  /** `fast`: disconnects every client; `immediate`: like a crash. */
  async stop(mode: "fast" | "immediate" = "fast"): Promise<void> {
    this.asPostgres("pg_ctl", ["-D", this.dataDir, "-m", mode, "-w", "stop"]);
  }

  /** Stops the cluster if it runs and removes its files. */
  async destroy(): Promise<void> {
    try {
      await this.stop("immediate");
    } catch {
      // not running
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export const redisSkipReason = (): string =>
  spawnSync("redis-server", ["--version"]).status === 0 ? "" : "no redis-server on PATH";

/** A redis-server of the test's own, on a free port, without persistence; kill and start at will. */
export class PrivateRedis {
  private child: ChildProcess | null = null;

  private constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async create(): Promise<PrivateRedis> {
    return new PrivateRedis(await freePort());
  }

  async start(): Promise<void> {
    const child = spawn(
      "redis-server",
      ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      { stdio: ["ignore", "pipe", "ignore"] },
    );
    this.child = child;
    let output = "";
    child.stdout?.setEncoding("utf8");
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on("data", (text: string) => {
        output += text;
        if (output.includes("Ready to accept connections")) resolve();
      });
      child.once("exit", (code) => reject(new Error(`redis-server exited with ${code}: ${output}`)));
    });
  }

  /** kill -9: Redis vanishes without a goodbye. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await exited;
  }
}

export const tmpfsSkipReason = (): string => {
  if (!isRoot) return "mounting a tmpfs needs root";
  const probe = mkdtempSync(join(tmpdir(), "handoff-tmpfs-probe-"));
  try {
    const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", probe]);
    if (mounted.status !== 0) return `mount -t tmpfs failed: ${mounted.stderr.toString().trim()}`;
    spawnSync("umount", [probe]);
    return "";
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
};

/** A small tmpfs mounted at `path` (created): a disk that fills up. */
export function mountTmpfs(path: string, sizeMiB: number): { unmount(): void } {
  mkdirSync(path, { recursive: true });
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${sizeMiB}m`, "tmpfs", path]);
  return {
    unmount: () => {
      spawnSync("umount", ["-l", path]);
    },
  };
}

/** A transfer the server acknowledged (201), with the bytes sent, to be checked afterwards. */
export interface Acknowledged {
  id: string;
  apiKey: string;
  files: Buffer[];
  /** When its create request was sent (Date.now()). */
  sentAt: number;
}

/**
 * Traffic beside a fault: per account, one worker sending small two-file transfers and one listing
 * transfers, until stopped. Every outcome is kept; every acknowledged transfer is remembered.
 */
export class Load {
  readonly outcomes: { what: string; outcome: Outcome }[] = [];
  readonly acknowledged: Acknowledged[] = [];
  private readonly stop = new AbortController();
  private readonly workers: Promise<void>[] = [];

  constructor(
    private readonly baseUrl: string,
    apiKeys: string[],
    private readonly pauseMs = 400,
  ) {
    for (const apiKey of apiKeys) {
      this.workers.push(this.sending(apiKey), this.listing(apiKey));
    }
  }

  private async sending(apiKey: string): Promise<void> {
    await loop(this.stop.signal, async () => {
      const files = [randomBytes(64 * 1024), randomBytes(1000)];
      const sentAt = Date.now();
      const outcome = await upload(this.baseUrl, apiKey, files, { chunk: 16 * 1024 });
      this.outcomes.push({ what: "POST /v1/transfers", outcome });
      if (!isCut(outcome) && outcome.status === 201)
        this.acknowledged.push({ id: outcome.body.id as string, apiKey, files, sentAt });
      await sleep(this.pauseMs);
    });
  }

  private async listing(apiKey: string): Promise<void> {
    await loop(this.stop.signal, async () => {
      this.outcomes.push({
        what: "GET /v1/transfers",
        outcome: await call(this.baseUrl, "GET", "/v1/transfers?limit=5", apiKey),
      });
      await sleep(this.pauseMs);
    });
  }

  async finish(): Promise<void> {
    this.stop.abort();
    await Promise.all(this.workers);
  }

  /** Outcomes other than a success or `allowed` answers: cut connections and anything else. */
  unexpected(
    allowed: (outcome: { status: number; body: Record<string, unknown>; headers: Headers }) => boolean,
  ) {
    return this.outcomes.filter(
      ({ outcome }) => isCut(outcome) || (outcome.status >= 300 && !allowed(outcome)),
    );
  }

  count(status: number): number {
    return this.outcomes.filter(({ outcome }) => !isCut(outcome) && outcome.status === status).length;
  }
}

/** A 503 in the one error body, with Retry-After: what a dependency away must answer. */
export const isServiceUnavailable = (outcome: {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}) =>
  outcome.status === 503 &&
  (outcome.body.error as { code?: string } | undefined)?.code === "SERVICE_UNAVAILABLE" &&
  Number(outcome.headers.get("retry-after")) > 0;

/** Every acknowledged transfer comes back byte for byte; answers the ones that do not. */
export async function lostOrChanged(
  baseUrl: string,
  acknowledged: Omit<Acknowledged, "sentAt">[],
): Promise<string[]> {
  const problems: string[] = [];
  for (const { id, apiKey, files } of acknowledged) {
    try {
      const back = await downloadAll(baseUrl, apiKey, id);
      if (back.length !== files.length || back.some((file, i) => !file.equals(files[i] as Buffer)))
        problems.push(`${id}: the bytes differ`);
    } catch (error) {
      problems.push(`${id}: ${(error as Error).message}`);
    }
  }
  return problems;
}
