import {
  CompactRange,
  entryLeafHash,
  equalHashes,
  formatVerifierKey,
  type Hash,
  NoteError,
  openCheckpoint,
  parseVerifierKey,
} from "@handoff/sdk/transparency";
import type { Knex } from "knex";
import type { EventStore, Position } from "../eventstore/port.js";
import type { Checkpoints, SignedCheckpoint } from "./checkpoints.js";
import { entryOf } from "./entries.js";
import { TILE_WIDTH, unpackHashes } from "./tiles.js";

/** What recomputing the tree from the stored events found (decisions 9.4). */
export type LogCheck =
  | { ok: true; leaves: number; checkpoint: number | null }
  | { ok: false; leaves: number; checkpoint: number | null; leafIndex: number; problem: string };

export interface CheckProgress {
  leaves: number;
  of: number;
}

const READ_BATCH = 5000;
/** Leaf tiles read from the database at once. */
const TILE_PAGE = 64;

/**
 * Recomputes every leaf from the events as the store holds them now and compares each with the
 * hash the log recorded when it first saw the event, and the roots with every signed checkpoint.
 * The first difference names its leaf: an event edited there, removed (every later leaf shifts),
 * or two events swapped. Memory stays flat: the leaves stream past, the tree is a compact range.
 */
export async function checkLog(
  store: EventStore,
  db: Knex,
  checkpoints: Checkpoints,
  onProgress: (progress: CheckProgress) => void = () => {},
): Promise<LogCheck> {
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

  // The next batch is read while this one is hashed: the check then costs the slower of the two.
  const read = (from: Position | null, upTo: number) =>
    store.readAll(from, Math.min(READ_BATCH, hashed - upTo));
  let reading = hashed > 0 ? read(null, 0) : Promise.resolve([]);
  // A batch read ahead and never awaited (the check stopped at a difference) must not go unhandled.
  reading.catch(() => undefined);
  while (range.size < hashed) {
    const events = await reading;
    if (events.length === 0) break;
    const last = events.at(-1)?.position ?? null;
    const upTo = range.size + events.length;
    reading = upTo < hashed ? read(last, upTo) : Promise.resolve([]);
    reading.catch(() => undefined);
    await recorded.cover(range.size, upTo - 1);
    for (const event of events) {
      const index = range.size;
      const leaf = entryLeafHash(entryOf(event));
      const expected = recorded.at(index);
      if (!expected) return failure(index, `the log's recorded hash of leaf ${index} is missing`);
      if (!equalHashes(leaf, expected)) {
        return failure(
          index,
          `leaf ${index} (the event at position ${event.position}) differs from the leaf the log recorded: ` +
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
    onProgress({ leaves: range.size, of: hashed });
  }
  if (range.size < hashed) {
    return failure(
      range.size,
      `leaf ${range.size} is missing: the log holds ${range.size} events, its tree ${hashed} leaves`,
    );
  }
  return { ok: true, leaves: range.size, checkpoint: lastChecked };
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
