import {
  CompactRange,
  equalHashes,
  formatVerifierKey,
  HASH_SIZE,
  type Hash,
  NoteError,
  openCheckpoint,
  parseVerifierKey,
} from "@handoff/sdk/transparency";
import type { Knex } from "knex";
import type { Position } from "../eventstore/port.js";
import type { Checkpoints, SignedCheckpoint } from "./checkpoints.js";
import type { HashedRun, LeafHashers } from "./leaf-hashes.js";
import { TILE_WIDTH, unpackHashes } from "./tiles.js";

/** What recomputing the tree from the stored events found (decisions 9.4). */
export type LogCheck =
  | { ok: true; leaves: number; checkpoint: number | null }
  | { ok: false; leaves: number; checkpoint: number | null; leafIndex: number; problem: string };

export interface CheckProgress {
  leaves: number;
  of: number;
}

/** Leaf tiles read from the database at once. */
const TILE_PAGE = 64;

export interface CheckOptions {
  onProgress?: (progress: CheckProgress) => void;
  /** Recompute the leaves: on the calling thread through the service's store unless given. */
  hashers?: LeafHashers;
  /** Leaves a run holds, a multiple of TILE_WIDTH: forty leaf tiles unless given. */
  runLeaves?: number;
  /** Runs asked of the hashers at once. */
  runsAhead?: number;
}

/**
 * Recomputes every leaf from the events as the store holds them now and compares each with the
 * hash the log recorded when it first saw the event, and the roots with every signed checkpoint.
 * The first difference names its leaf: an event edited there, removed (every later leaf shifts),
 * or two events swapped. Memory stays flat: the leaves stream past, the tree is a compact range.
 *
 * The leaves are recomputed in runs by `hashers`, several runs at once: each run starts after the
 * position the log recorded for the leaf before it, and is used only once the run before it has
 * ended on that very position; a run that starts elsewhere is recomputed from where the one before
 * really ended. The leaves then come out exactly as one read of the whole log gives them.
 */
export async function checkLog(
  hashers: LeafHashers,
  db: Knex,
  checkpoints: Checkpoints,
  { onProgress = () => {}, runLeaves = 40 * TILE_WIDTH, runsAhead = 2 }: Omit<CheckOptions, "hashers"> = {},
): Promise<LogCheck> {
  if (runLeaves <= 0 || runLeaves % TILE_WIDTH !== 0)
    throw new RangeError("runLeaves: a multiple of TILE_WIDTH");
  const state = await db("log_state").where({ id: 1 }).first<{ size: string | number }>();
  const hashed = Number(state?.size ?? 0);
  const signed = checkpoints.all()[Symbol.asyncIterator]();
  const recorded = recordedLeaves(db, hashed);
  const range = new CompactRange();
  let next = await nextCheckpoint(signed, checkpoints.publicKey);
  let lastChecked: number | null = null;
  const failure = (leafIndex: number, problem: string): LogCheck => ({
    ok: false,
    leaves: range.size,
    checkpoint: lastChecked,
    leafIndex,
    problem,
  });
  if (next instanceof NoteError) return failure(0, `a kept checkpoint does not verify: ${next.message}`);

  const runs = plannedRuns(db, hashed, hashers, runLeaves, runsAhead);
  let endedAt: Position | null = null;
  while (range.size < hashed) {
    const run = await runs.next(endedAt);
    if (run.positions.length === 0) break;
    await recorded.cover(range.size, range.size + run.positions.length - 1);
    for (let i = 0; i < run.positions.length; i++) {
      const index = range.size;
      const leaf = run.hashes.slice(i * HASH_SIZE, (i + 1) * HASH_SIZE);
      const expected = recorded.at(index);
      if (!expected) return failure(index, `the log's recorded hash of leaf ${index} is missing`);
      if (!equalHashes(leaf, expected)) {
        return failure(
          index,
          `leaf ${index} (the event at position ${run.positions[i]}) differs from the leaf the log recorded: ` +
            "an event was edited, removed or reordered there",
        );
      }
      range.append(leaf);
      while (next && next.size === range.size) {
        if (!equalHashes(range.root(), next.root)) {
          return failure(
            lastChecked ?? 0,
            `the tree of ${next.size} leaves does not have the root its signed checkpoint has: ` +
              `the tree's stored hashes were changed between leaves ${lastChecked ?? 0} and ${next.size}`,
          );
        }
        lastChecked = next.size;
        const following = await nextCheckpoint(signed, checkpoints.publicKey);
        if (following instanceof NoteError)
          return failure(range.size, `a kept checkpoint does not verify: ${following.message}`);
        next = following;
      }
    }
    endedAt = run.positions.at(-1) ?? endedAt;
    onProgress({ leaves: range.size, of: hashed });
  }
  runs.stop();
  if (range.size < hashed) {
    return failure(
      range.size,
      `leaf ${range.size} is missing: the log holds ${range.size} events, its tree ${hashed} leaves`,
    );
  }
  return { ok: true, leaves: range.size, checkpoint: lastChecked };
}

/**
 * The runs of leaves 0 … `size` - 1 in order, `ahead` of them asked of the hashers at once, each
 * started after the position the log recorded before its first leaf. `next(endedAt)` answers the
 * next run as it follows `endedAt`, where the run before it really ended.
 */
function plannedRuns(db: Knex, size: number, hashers: LeafHashers, runLeaves: number, ahead: number) {
  const asked: { first: number; after: Promise<Position | null>; hashed: Promise<HashedRun> }[] = [];
  let planned = 0;
  const ask = () => {
    while (asked.length < ahead && planned < size) {
      const first = planned;
      const count = Math.min(runLeaves, size - first);
      const after = first === 0 ? Promise.resolve(null) : recordedPositionBefore(db, first);
      const hashed = after.then((position) => hashers.hash({ after: position, count }));
      // A run asked ahead and never used (the check stopped at a difference) must not go unhandled.
      hashed.catch(() => undefined);
      asked.push({ first, after, hashed });
      planned += count;
    }
  };
  return {
    async next(endedAt: Position | null): Promise<HashedRun> {
      ask();
      const run = asked.shift();
      if (!run) return { hashes: new Uint8Array(0), positions: [] };
      ask();
      if ((await run.after) === endedAt) return run.hashed;
      return hashers.hash({ after: endedAt, count: Math.min(runLeaves, size - run.first) });
    },
    stop() {
      asked.length = 0;
    },
  };
}

/** The position the log recorded for leaf `leaf` - 1 (`leaf` a multiple of TILE_WIDTH); null if none. */
async function recordedPositionBefore(db: Knex, leaf: number): Promise<Position | null> {
  const row = await db("log_leaf_positions")
    .where({ tile: leaf / TILE_WIDTH - 1 })
    .first<{ positions: string } | undefined>("positions");
  return row?.positions.split("\n").at(-1) ?? null;
}

/**
 * The next kept checkpoint, its signature by the log's key checked; null after the last; a NoteError
 * for a bad one. Each is checked under the origin it names: a deployment that moved to another
 * PUBLIC_BASE_URL signs under a new name with the same key, and its old checkpoints still count.
 */
async function nextCheckpoint(
  signed: AsyncIterator<SignedCheckpoint>,
  publicKey: Uint8Array,
): Promise<{ size: number; root: Hash } | null | NoteError> {
  const { value, done } = await signed.next();
  if (done) return null;
  try {
    const origin = value.note.slice(0, value.note.indexOf("\n"));
    const key = parseVerifierKey(formatVerifierKey(origin, publicKey));
    return { size: value.size, root: openCheckpoint(value.note, key).root };
  } catch (error) {
    if (error instanceof NoteError) return error;
    throw error;
  }
}

/**
 * The leaf hashes the log recorded, read a page of tiles at a time in leaf order: `cover` loads what
 * a batch of leaves needs, then `at` answers without a wait per leaf.
 */
function recordedLeaves(db: Knex, size: number) {
  let page: Map<number, Hash[]> = new Map();
  return {
    async cover(first: number, last: number): Promise<void> {
      const [from, to] = [Math.floor(first / TILE_WIDTH), Math.floor(last / TILE_WIDTH)];
      if (page.has(from) && page.has(to)) return;
      const rows = await db("log_tiles")
        .where({ level: 0 })
        .whereBetween("tile", [from, Math.max(to, from + TILE_PAGE - 1)])
        .select<{ tile: string | number; hashes: Uint8Array }[]>("tile", "hashes");
      page = new Map(rows.map((row) => [Number(row.tile), unpackHashes(row.hashes)]));
    },
    at(index: number): Hash | null {
      return index < size ? (page.get(Math.floor(index / TILE_WIDTH))?.[index % TILE_WIDTH] ?? null) : null;
    },
  };
}
