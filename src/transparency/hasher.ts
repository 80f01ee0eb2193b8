import { entryLeafHash } from "@handoff/sdk/transparency";
import type { Knex } from "knex";
import type { EventStore, RecordedEvent, Subscription } from "../eventstore/port.js";
import type { Checkpoints } from "./checkpoints.js";
import { TreeEdge, writeChanges } from "./edge.js";
import { entryOf } from "./entries.js";
import type { TileReader } from "./tiles.js";

/**
 * How long the hasher gathers appends before it hashes them. Off the request path: a batch costs a
 * transaction whatever its size, and a checkpoint must cover every event within 1 s (decisions 9.2).
 */
const READ_INTERVAL_MS = 200;
/** At most one checkpoint this often: under load, some two a second; idle, none. */
export const SIGN_INTERVAL_MS = 500;
const BATCH_SIZE = 2000;
/** After another instance moved the tree, wait this long before following it again. */
const MOVED_BACKOFF_MS = 2000;

/** Whether the log may sign: not while its start-up check runs, never once it found tampering. */
export interface SigningGate {
  maySign(): boolean;
}

/**
 * What TransparencyLog asks of the hasher, wherever it runs: in this thread (inProcessHasher) or on
 * a thread of its own (ThreadHasher, threaded-hasher.ts).
 */
export interface TreeHasher {
  start(): Promise<void>;
  /** Resolves once the hasher's last transaction has ended and nothing of it runs any more. */
  stop(): Promise<void>;
  /** Signs the tree as it stands now if it grew since the last checkpoint (once signing is open). */
  signNow(): Promise<void>;
  /** Opens signing once a check of the past passed; closes it while one runs and after tampering. */
  gateSigning(open: boolean): void;
}

/** A LogHasher in this thread, its signing gate a flag: on the embedded database, with KurrentDB, and inside the hasher's thread. */
export function inProcessHasher(
  store: EventStore,
  db: Knex,
  tiles: TileReader,
  checkpoints: Checkpoints,
  onError: (error: unknown) => void,
): TreeHasher {
  let open = false;
  const hasher = new LogHasher(store, db, tiles, checkpoints, { maySign: () => open }, onError);
  return {
    start: () => hasher.start(),
    stop: () => hasher.stop(),
    signNow: () => hasher.signNow(),
    gateSigning: (allowed) => {
      open = allowed;
    },
  };
}

/**
 * Makes the log's Merkle tree (decisions 9.1): a catch-up subscription of its own, like a reactor's,
 * appends every event as a leaf and writes the changed tiles, the leaf positions and its place in one
 * transaction, then signs a checkpoint of the new size at most every SIGN_INTERVAL_MS. A second
 * instance doing the same meets the compare-and-set on the tree's size and follows the winner.
 */
export class LogHasher {
  private subscription: Subscription | null = null;
  private edge: TreeEdge | null = null;
  private signedSize = 0;
  private signedAt = 0;
  private pendingSign: NodeJS.Timeout | null = null;
  /** Batches and deferred signatures take turns: the edge is only read between two batches. */
  private turn: Promise<unknown> = Promise.resolve();
  private stopped = true;
  private moved = false;

  constructor(
    private readonly store: EventStore,
    private readonly db: Knex,
    private readonly tiles: TileReader,
    private readonly checkpoints: Checkpoints,
    private readonly gate: SigningGate,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** The number of leaves hashed so far in this process. */
  get size(): number {
    return this.edge?.size ?? 0;
  }

  async start(): Promise<void> {
    this.stopped = false;
    await this.follow();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pendingSign) clearTimeout(this.pendingSign);
    this.pendingSign = null;
    await this.subscription?.stop();
    this.subscription = null;
    await this.turn;
  }

  /** Signs the tree as it stands now if it grew since the last checkpoint (after the start-up check). */
  signNow(): Promise<void> {
    return this.inTurn(async () => {
      if (this.edge && this.edge.size > this.signedSize) {
        const size = this.edge.size;
        const root = await this.edge.root();
        await this.db.transaction((trx) => this.checkpoints.sign(trx, size, root));
        this.signed(size);
      }
    });
  }

  private async follow(): Promise<void> {
    this.moved = false;
    const edge = await TreeEdge.load(this.db, this.tiles);
    this.edge = edge;
    this.signedSize = (await this.checkpoints.newest())?.size ?? 0;
    this.subscription = this.store.subscribe({
      from: edge.lastPosition,
      batchSize: BATCH_SIZE,
      readIntervalMs: READ_INTERVAL_MS,
      handle: (batch) => this.inTurn(() => this.hash(edge, batch)),
      onError: this.onError,
    });
    // Events hashed before a restart but never signed are signed now.
    this.scheduleSign();
  }

  private async hash(edge: TreeEdge, batch: RecordedEvent[]): Promise<void> {
    if (this.moved || this.edge !== edge) return;
    for (const event of batch) edge.append(entryLeafHash(entryOf(event)), event.position);
    const changes = edge.takeChanges();
    const signNow = this.gate.maySign() && Date.now() - this.signedAt >= SIGN_INTERVAL_MS;
    const root = signNow ? await edge.root() : null;
    const written = await this.db.transaction(async (trx) => {
      if (!(await writeChanges(trx, changes))) return false;
      if (root) await this.checkpoints.sign(trx, changes.to, root);
      return true;
    });
    if (!written) return this.followTheWinner();
    if (root) this.signed(changes.to);
    this.scheduleSign();
  }

  private signed(size: number): void {
    this.signedSize = size;
    this.signedAt = Date.now();
  }

  /** Growth not yet signed is signed once SIGN_INTERVAL_MS has passed since the last checkpoint. */
  private scheduleSign(): void {
    if (this.pendingSign || this.stopped || (this.edge?.size ?? 0) <= this.signedSize) return;
    const wait = this.gate.maySign()
      ? Math.max(0, this.signedAt + SIGN_INTERVAL_MS - Date.now())
      : SIGN_INTERVAL_MS;
    this.pendingSign = setTimeout(() => {
      this.pendingSign = null;
      if (!this.gate.maySign()) return this.scheduleSign();
      this.signNow().catch(this.onError);
    }, wait);
    this.pendingSign.unref();
  }

  /** Another instance wrote the tree first: stop, and follow the tree from where it now stands. */
  private followTheWinner(): void {
    this.moved = true;
    const restart = async () => {
      await this.subscription?.stop();
      await new Promise((resolve) => setTimeout(resolve, MOVED_BACKOFF_MS));
      if (!this.stopped) await this.follow();
    };
    restart().catch(this.onError);
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const run = this.turn.then(work);
    this.turn = run.catch(() => undefined);
    return run;
  }
}
