import { fromBase64 } from "../crypto/base64.js";
import { type AnsweredKeys, checkKeyProof, type KeyProof } from "./key-proof.js";
import { equalHashes, verifyConsistency } from "./merkle.js";
import { type Checkpoint, openCheckpoint, parseVerifierKey, type VerifierKey } from "./note.js";

/** What a client keeps of the log (decisions 9.6): the key it pinned at first use and the newest checkpoint it saw. */
export interface LogState {
  vkey: string;
  checkpoint: string | null;
}

/** Where a client keeps its LogState and how it asks the server: a file and HTTP in Node, localStorage and fetch in a browser. */
export interface LogViewPorts {
  load(): Promise<LogState | null>;
  save(state: LogState): Promise<void>;
  /** GET /v1/log/key's `vkey`. */
  fetchVerifierKey(): Promise<string>;
  /** GET /v1/log/proof/consistency's `proof` (base64 hashes). */
  fetchConsistency(from: number, to: number): Promise<string[]>;
}

/** The log does not back what a client was shown: a key, or a checkpoint that forks the one seen before. */
export class LogViewError extends Error {
  constructor(
    readonly code: "LOG_FORKED" | "KEY_NOT_IN_LOG",
    message: string,
  ) {
    super(message);
    this.name = "LogViewError";
  }
}

/**
 * A client's view of the transparency log: it pins the log's verifier key at first use, and holds
 * every checkpoint it is shown to the newest one it saw before, with a consistency proof from the
 * server (either way round); the newer is kept. Pure: storage and requests are the ports'.
 */
export class LogView {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly ports: LogViewPorts) {}

  /** The pinned verifier key, pinning the server's at first use. */
  logKey(): Promise<VerifierKey> {
    return this.inTurn(async () => parseVerifierKey((await this.pinned()).vkey));
  }

  /** Checks `note` (signed by the pinned key) against the newest checkpoint seen before, and keeps the newer. */
  observe(note: string): Promise<Checkpoint> {
    return this.inTurn(async () => {
      const state = await this.pinned();
      const key = parseVerifierKey(state.vkey);
      let seen: Checkpoint;
      try {
        seen = openCheckpoint(note, key);
      } catch (error) {
        throw new LogViewError(
          "KEY_NOT_IN_LOG",
          `a checkpoint not signed by the pinned log key: ${(error as Error).message}`,
        );
      }
      const kept = state.checkpoint ? openCheckpoint(state.checkpoint, key) : null;
      if (kept) await this.requireConsistent(kept, seen);
      if (!kept || seen.size > kept.size) await this.ports.save({ ...state, checkpoint: note });
      return seen;
    });
  }

  private async requireConsistent(a: Checkpoint, b: Checkpoint): Promise<void> {
    const [older, newer] = a.size <= b.size ? [a, b] : [b, a];
    if (older.size === newer.size) {
      if (!equalHashes(older.root, newer.root)) throw forked(older.size, newer.size);
      return;
    }
    if (older.size === 0) return;
    let proof: Uint8Array[];
    try {
      proof = (await this.ports.fetchConsistency(older.size, newer.size)).map(fromBase64);
    } catch (error) {
      // A server that will not prove one tree extends the other shows no one log.
      throw forked(older.size, newer.size, error);
    }
    if (!verifyConsistency(older.size, newer.size, older.root, newer.root, proof)) {
      throw forked(older.size, newer.size);
    }
  }

  private async pinned(): Promise<LogState> {
    const state = await this.ports.load();
    if (state) return state;
    const vkey = await this.ports.fetchVerifierKey();
    parseVerifierKey(vkey);
    const fresh = { vkey, checkpoint: null };
    await this.ports.save(fresh);
    return fresh;
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

function forked(from: number, to: number, cause?: unknown): LogViewError {
  const error = new LogViewError(
    "LOG_FORKED",
    `the log's checkpoint of ${to} entries and the one of ${from} seen before are not one log: the server shows a forked log`,
  );
  if (cause !== undefined) error.cause = cause;
  return error;
}

/**
 * Decisions 9.6: the keys answered for `agent` must be proven by `proof` in a checkpoint signed by the
 * pinned log key, consistent with every checkpoint seen before. Throws LogViewError (KEY_NOT_IN_LOG,
 * LOG_FORKED) naming the agent otherwise.
 */
export async function requireProvenKeys(
  view: LogView,
  agent: string,
  keys: AnsweredKeys,
  proof: KeyProof | null | undefined,
): Promise<void> {
  const refuse = (why: string) =>
    new LogViewError(
      "KEY_NOT_IN_LOG",
      `the keys the server gave for agent '${agent}' are not backed by the transparency log: ${why}`,
    );
  if (!proof) throw refuse("the answer carries no key_proof");
  try {
    checkKeyProof(proof, keys, await view.logKey());
  } catch (error) {
    if (error instanceof LogViewError) throw error;
    throw refuse((error as Error).message);
  }
  await view.observe(proof.checkpoint);
}
