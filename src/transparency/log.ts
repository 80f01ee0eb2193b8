import { toBase64 } from "@handoff/sdk/crypto";
import {
  consistencyProof,
  type Hash,
  inclusionProof,
  type KeyProof,
  type LogEntry,
} from "@handoff/sdk/transparency";
import type { Knex } from "knex";
import type { EventStore, Position, RecordedEvent } from "../eventstore/port.js";
import { type CheckOptions, type CheckProgress, checkLog, type LogCheck } from "./check.js";
import { Checkpoints, type SignedCheckpoint } from "./checkpoints.js";
import { entryOf } from "./entries.js";
import { inProcessHasher, type TreeHasher } from "./hasher.js";
import { inThreadHashers } from "./leaf-hashes.js";
import { ThreadHasher } from "./threaded-hasher.js";
import { TILE_WIDTH, TileReader } from "./tiles.js";

interface PositionsRow {
  tile: string | number;
  positions: string;
}

/** How often a wait for a leaf looks again. */
const LEAF_POLL_MS = 50;

/** Why a proof cannot be given: the caller asked beyond what the log has signed. */
export class BeyondCheckpoint extends Error {}

/** A leaf and the event it is. */
export interface LeafEntry {
  leafIndex: number;
  event: RecordedEvent;
  entry: LogEntry;
}

/** The start-up check's state, which /readyz reports and which gates signing (decisions 9.4). */
export type LogHealth =
  | { state: "checking"; progress: CheckProgress | null }
  | { state: "ok" }
  | { state: "tampered"; leafIndex: number; problem: string };

/**
 * The transparency log (decisions 9): the hasher that grows the Merkle tree off the request path,
 * its signed checkpoints, proofs read from the tree's tiles, and the check that nothing rewrote the
 * past. Works on any event store; the tree lives beside the read models.
 */
export class TransparencyLog {
  readonly checkpoints: Checkpoints;
  private readonly tiles: TileReader;
  private readonly hasher: TreeHasher;
  private health: LogHealth = { state: "checking", progress: null };
  private checking: Promise<void> | null = null;

  /**
   * With `hasherThread` (the URL of the PostgreSQL database the events are in), the hasher runs on
   * a thread of its own, off the request thread; else in this one (the embedded database, whose
   * PGlite is a thread of this process already, and KurrentDB).
   */
  constructor(
    private readonly store: EventStore,
    private readonly db: Knex,
    origin: string,
    seed: Uint8Array,
    private readonly onError: (error: unknown) => void,
    { hasherThread }: { hasherThread?: string | null } = {},
  ) {
    this.checkpoints = new Checkpoints(db, origin, seed);
    this.tiles = new TileReader(db);
    this.hasher = hasherThread
      ? new ThreadHasher({ databaseUrl: hasherThread, origin, seed }, onError)
      : inProcessHasher(store, db, this.tiles, this.checkpoints, onError);
  }

  get state(): LogHealth {
    return this.health;
  }

  /** The thread the hasher runs on, while it runs on one of its own (else null): where the hashing is done. */
  get hasherThreadId(): number | null {
    return this.hasher instanceof ThreadHasher ? this.hasher.threadId : null;
  }

  /** Starts hashing, and checks the past in the background: signing waits for the check. */
  async start(): Promise<void> {
    await this.hasher.start();
    this.checking = this.check().then((result) => {
      if (!result.ok) {
        this.onError(new Error(`transparency log tampered: ${result.problem}`));
        return;
      }
      return this.hasher.signNow();
    });
    this.checking.catch(this.onError);
  }

  async stop(): Promise<void> {
    await this.checking?.catch(() => undefined);
    await this.hasher.stop();
  }

  /**
   * Recomputes the tree from the stored events (decisions 9.4); a difference marks the log tampered.
   * The leaves are recomputed on this thread through the service's store unless `hashers` are given
   * (`handoff log check` gives threads of their own).
   */
  async check({ onProgress, hashers, ...runs }: CheckOptions = {}): Promise<LogCheck> {
    if (this.health.state !== "tampered") this.setHealth({ state: "checking", progress: null });
    const result = await checkLog(hashers ?? inThreadHashers(this.store), this.db, this.checkpoints, {
      ...runs,
      onProgress: (progress) => {
        if (this.health.state === "checking") this.setHealth({ state: "checking", progress });
        onProgress?.(progress);
      },
    });
    this.setHealth(
      result.ok
        ? { state: "ok" }
        : { state: "tampered", leafIndex: result.leafIndex, problem: result.problem },
    );
    return result;
  }

  /** The hasher signs only while the log is known untampered: not during a check, never after tampering. */
  private setHealth(health: LogHealth): void {
    this.health = health;
    this.hasher.gateSigning(health.state === "ok");
  }

  newestCheckpoint(): Promise<SignedCheckpoint | null> {
    return this.checkpoints.newest();
  }

  checkpointAt(size: number): Promise<SignedCheckpoint | null> {
    return this.checkpoints.at(size);
  }

  /** RFC 9162 2.1.3: the audit path of a leaf in a signed tree. */
  async inclusion(leafIndex: number, treeSize: number): Promise<Hash[]> {
    return (await this.inclusionsIn(treeSize))(leafIndex);
  }

  /** Audit paths in one signed tree, its size checked once: what an export of many entries asks. */
  async inclusionsIn(treeSize: number): Promise<(leafIndex: number) => Promise<Hash[]>> {
    await this.requireSigned(treeSize);
    return async (leafIndex) => {
      if (leafIndex >= treeSize) {
        throw new BeyondCheckpoint(`leaf_index ${leafIndex} is not in a tree of ${treeSize}`);
      }
      return inclusionProof(this.tiles.subtrees, leafIndex, treeSize);
    };
  }

  /** RFC 9162 2.1.4: the proof that the signed tree of `to` leaves extends the one of `from`. */
  async consistency(from: number, to: number): Promise<Hash[]> {
    await this.requireSigned(to);
    if (from < 1 || from > to) throw new BeyondCheckpoint(`no consistency proof from ${from} to ${to}`);
    return consistencyProof(this.tiles.subtrees, from, to);
  }

  /** The leaf of the event at `position`, once the hasher has reached it; null before, or for no such event. */
  async leafOf(position: Position): Promise<LeafEntry | null> {
    const row = await this.db("log_leaf_positions")
      .where("first_position", "<=", position)
      .orderBy("first_position", "desc")
      .first<PositionsRow | undefined>("tile", "positions");
    const offset = row ? row.positions.split("\n").indexOf(position) : -1;
    return row && offset >= 0 ? this.leafIn(row, offset) : null;
  }

  /** The leaf of the event at `position` once the hasher reaches it (it reads every 200 ms), or null after `timeoutMs`. */
  async waitForLeaf(position: Position, timeoutMs: number): Promise<LeafEntry | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const leaf = await this.leafOf(position);
      if (leaf || Date.now() >= deadline) return leaf;
      await new Promise((resolve) => setTimeout(resolve, LEAF_POLL_MS));
    }
  }

  /** The hash the tree holds for a leaf: what its proofs start from. */
  async leafHash(leafIndex: number): Promise<Hash> {
    const tile = Math.floor(leafIndex / TILE_WIDTH);
    const offset = leafIndex % TILE_WIDTH;
    return (await this.tiles.get(0, tile, offset + 1))[offset] as Hash;
  }

  private async leafIn(row: PositionsRow, offset: number): Promise<LeafEntry | null> {
    const positions = row.positions.split("\n");
    const position = positions[offset];
    if (position === undefined) return null;
    const previous =
      offset > 0 ? (positions[offset - 1] as string) : await this.lastPositionBefore(Number(row.tile));
    const [event] = await this.store.readAll(previous, 1);
    if (!event || event.position !== position) return null;
    return { leafIndex: Number(row.tile) * TILE_WIDTH + offset, event, entry: entryOf(event) };
  }

  /** 9.6: the proof of the leaf at `position` in the newest checkpoint; null until a checkpoint covers it. */
  async keyProof(position: Position | null): Promise<KeyProof | null> {
    if (position === null) return null;
    const [leaf, newest] = await Promise.all([this.leafOf(position), this.newestCheckpoint()]);
    if (!leaf || !newest || leaf.leafIndex >= newest.size) return null;
    const proof = await inclusionProof(this.tiles.subtrees, leaf.leafIndex, newest.size);
    return {
      leaf_index: leaf.leafIndex,
      entry: leaf.entry,
      tree_size: newest.size,
      checkpoint: newest.note,
      inclusion: proof.map(toBase64),
    };
  }

  private async lastPositionBefore(tile: number): Promise<Position | null> {
    if (tile === 0) return null;
    const row = await this.db("log_leaf_positions")
      .where({ tile: tile - 1 })
      .first<{ positions: string } | undefined>("positions");
    return row?.positions.split("\n").at(-1) ?? null;
  }

  private async requireSigned(treeSize: number): Promise<void> {
    const newest = await this.newestCheckpoint();
    if (!newest || treeSize > newest.size || treeSize < 1) {
      throw new BeyondCheckpoint(
        `tree_size ${treeSize} is beyond the newest checkpoint (${newest?.size ?? 0} leaves)`,
      );
    }
  }
}
