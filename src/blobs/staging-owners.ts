import { randomBytes } from "node:crypto";
import { mkdir, readdir, rm, stat, utimes, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { processRuns } from "../process-runs.js";

/** How often a live store renews its lease: the mtime of its heartbeat file. */
const HEARTBEAT_MS = 10_000;
/** A heartbeat older than this is a store that is gone (killed, its machine down, cut off). */
export const OWNER_LEASE_MS = 60_000;

/** One store (one process) writing into a blob folder, as its staging files and heartbeat name it. */
export interface StagingOwner {
  host: string;
  pid: number;
  /** Tells apart two lives of one pid. */
  nonce: string;
}

/** `~` separates the parts of a staging file's name, so no part may contain one. */
export const escapePart = (text: string) => encodeURIComponent(text).replace(/~/g, "%7E");

const formatOwner = ({ host, pid, nonce }: StagingOwner) => escapePart(`${host}/${pid}/${nonce}`);

export function parseOwner(text: string): StagingOwner | null {
  const [host, pid, nonce] = safeDecode(text)?.split("/") ?? [];
  return host && pid && nonce && /^\d+$/.test(pid) ? { host, pid: Number(pid), nonce } : null;
}

export function safeDecode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/**
 * The owners of the staging files in a blob folder that several processes (on several machines,
 * over a network file system) may share. Each store writes a heartbeat file under `dir` and
 * renews it every HEARTBEAT_MS while it runs: its lease. An owner is alive while its lease is
 * fresh; on this machine, also only while its process runs, so a crash's leftovers go at once.
 * Only what no live owner may still be writing is ever swept.
 */
export class StagingOwners {
  readonly self: StagingOwner = { host: hostname(), pid: process.pid, nonce: randomBytes(6).toString("hex") };
  readonly selfName = formatOwner(this.self);
  private timer: NodeJS.Timeout | null = null;
  private started: Promise<void> | null = null;

  constructor(private readonly dir: string) {}

  /** Writes the heartbeat and keeps it fresh; idempotent. */
  start(): Promise<void> {
    this.started ??= (async () => {
      await mkdir(this.dir, { recursive: true });
      await writeFile(this.heartbeat(), "");
      this.timer = setInterval(() => void this.renew(), HEARTBEAT_MS);
      this.timer.unref();
    })();
    return this.started;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.started) await rm(this.heartbeat(), { force: true });
    this.started = null;
  }

  /** Whether `owner` (a name from a staging file) may still be writing. */
  async isAlive(ownerName: string, nowMs = Date.now()): Promise<boolean> {
    if (ownerName === this.selfName) return true;
    const owner = parseOwner(ownerName);
    if (!owner) return false;
    if (owner.host === this.self.host && !processRuns(owner.pid)) return false;
    const beat = await stat(join(this.dir, ownerName)).catch(() => null);
    return beat !== null && beat.mtimeMs > nowMs - OWNER_LEASE_MS;
  }

  /** Whether another live store writes into this folder; forgets the heartbeats of dead ones. */
  async othersAlive(nowMs = Date.now()): Promise<boolean> {
    let alive = false;
    for (const name of await readdir(this.dir).catch(() => [] as string[])) {
      if (name === this.selfName) continue;
      if (await this.isAlive(name, nowMs)) alive = true;
      else await rm(join(this.dir, name), { force: true });
    }
    return alive;
  }

  private heartbeat(): string {
    return join(this.dir, this.selfName);
  }

  /** Renews the lease; a heartbeat swept meanwhile (it looked dead) is written again. */
  private async renew(): Promise<void> {
    const now = new Date();
    await utimes(this.heartbeat(), now, now).catch(() => writeFile(this.heartbeat(), "").catch(() => {}));
  }
}
