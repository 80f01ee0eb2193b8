import { readFile } from "node:fs/promises";
import { fromBase64 } from "./crypto/base64.js";
import { HandoffCustodyError, HandoffError } from "./errors.js";
import type { Transport } from "./http.js";
import { writePrivateFile } from "./private-file.js";
import {
  type Checkpoint,
  openCheckpoint,
  parseVerifierKey,
  type VerifierKey,
  verifyConsistency,
} from "./transparency/index.js";

/** What a client keeps of the log (decisions 9.6): the key it pinned at first use and the newest checkpoint it saw. */
interface LogFile {
  vkey: string;
  checkpoint: string | null;
}

/** `agent.json` → `agent.log.json`: the log's pin lives beside the identity that saw it, as its pins do. */
export function defaultLogPath(identityPath: string): string {
  return `${identityPath.replace(/\.json$/i, "")}.log.json`;
}

/**
 * A client's view of the transparency log: it pins the log's verifier key at first use, and holds
 * every checkpoint it is shown to the newest one it saw before, with a consistency proof from the
 * server. A checkpoint that does not extend (or is not extended by) the kept one is a forked log:
 * LOG_FORKED. Kept in a JSON file (mode 0600) when a path is given, else for the client's lifetime.
 */
export class LogWitness {
  private memory: LogFile | null = null;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly transport: Transport,
    private readonly path: string | null,
  ) {}

  /** The pinned verifier key, pinning the server's at first use. */
  logKey(): Promise<VerifierKey> {
    return this.inTurn(async () => parseVerifierKey((await this.pinned()).vkey));
  }

  /**
   * Checks `note` (a checkpoint signed by the pinned key) against the newest one seen before and
   * keeps the newer of the two. Throws LOG_FORKED when they are not one log.
   */
  observe(note: string): Promise<Checkpoint> {
    return this.inTurn(async () => {
      const state = await this.pinned();
      const key = parseVerifierKey(state.vkey);
      const seen = openCheckpoint(note, key);
      const kept = state.checkpoint ? openCheckpoint(state.checkpoint, key) : null;
      if (kept) await this.requireConsistent(kept, seen);
      if (!kept || seen.size > kept.size) await this.save({ ...state, checkpoint: note });
      return seen;
    });
  }

  private async requireConsistent(a: Checkpoint, b: Checkpoint): Promise<void> {
    const [older, newer] = a.size <= b.size ? [a, b] : [b, a];
    if (older.size === newer.size || older.size === 0) {
      if (older.size === newer.size && !sameBytes(older.root, newer.root))
        throw forked(older.size, newer.size);
      return;
    }
    const answer = await this.transport.json<{ proof: string[] }>({
      method: "GET",
      url: "/v1/log/proof/consistency",
      idempotent: true,
      query: { from: older.size, to: newer.size },
    });
    const proof = answer.proof.map(fromBase64);
    if (!verifyConsistency(older.size, newer.size, older.root, newer.root, proof)) {
      throw forked(older.size, newer.size);
    }
  }

  private async pinned(): Promise<LogFile> {
    const state = await this.load();
    if (state) return state;
    const { vkey } = await this.transport.json<{ vkey: string }>({
      method: "GET",
      url: "/v1/log/key",
      idempotent: true,
    });
    parseVerifierKey(vkey);
    const fresh = { vkey, checkpoint: null };
    await this.save(fresh);
    return fresh;
  }

  private async load(): Promise<LogFile | null> {
    if (!this.path) return this.memory;
    try {
      return JSON.parse(await readFile(this.path, "utf8")) as LogFile;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw new HandoffError("INVALID_LOG_STATE", `${this.path} cannot be read: ${(error as Error).message}`);
    }
  }

  private async save(state: LogFile): Promise<void> {
    this.memory = state;
    if (this.path) await writePrivateFile(this.path, `${JSON.stringify(state, null, 2)}\n`);
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

function forked(from: number, to: number): HandoffCustodyError {
  return new HandoffCustodyError(
    "LOG_FORKED",
    `the log's checkpoint of ${to} entries does not extend the one of ${from} seen before: the server shows a forked log`,
  );
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}
