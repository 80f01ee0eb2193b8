import { HASH_SIZE, type Hash, nodeHash, type SubtreeSource } from "@handoff/sdk/transparency";
import type { Knex } from "knex";
import { batchedPerDatabase } from "../db/batched.js";

/**
 * The tree's hashes as tiles (migrations/012_transparency_log.ts): a tile of level L holds up to
 * TILE_WIDTH hashes of tree level TILE_HEIGHT·L. Any complete subtree's hash is then read from one
 * tile and hashed up at most TILE_HEIGHT − 1 levels, so a proof costs a few indexed reads, and the
 * tree stores some 32 bytes per leaf.
 */
export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 2 ** TILE_HEIGHT;

/** Where a complete subtree's hashes lie: which tile, from which slot, how many, hashed up how far. */
export interface TileSpan {
  level: number;
  tile: number;
  offset: number;
  count: number;
  /** Levels to hash `count` tile entries up by to reach the subtree's root. */
  height: number;
}

export function spanOf(level: number, index: number): TileSpan {
  const tileLevel = Math.floor(level / TILE_HEIGHT);
  const height = level % TILE_HEIGHT;
  const count = 2 ** height;
  const first = index * count;
  return {
    level: tileLevel,
    tile: Math.floor(first / TILE_WIDTH),
    offset: first % TILE_WIDTH,
    count,
    height,
  };
}

/** The root of 2^height hashes side by side. */
export function hashUp(hashes: Hash[], height: number): Hash {
  let row = hashes;
  for (let h = 0; h < height; h++) {
    const next: Hash[] = [];
    for (let i = 0; i < row.length; i += 2) next.push(nodeHash(row[i] as Hash, row[i + 1] as Hash));
    row = next;
  }
  const [root] = row;
  if (!root || row.length !== 1) throw new RangeError("hashUp needs exactly 2^height hashes");
  return root;
}

/** A tile's hashes, at least `length` of them: from memory (the growing edge) or the database. */
export type TileGetter = (level: number, tile: number, length: number) => Promise<Hash[]>;

/** The tree's complete subtrees, read from tiles. */
export function tileSubtrees(getTile: TileGetter): SubtreeSource {
  return {
    async complete(level, index) {
      const span = spanOf(level, index);
      const hashes = await getTile(span.level, span.tile, span.offset + span.count);
      return hashUp(hashes.slice(span.offset, span.offset + span.count), span.height);
    },
  };
}

export function packHashes(hashes: Hash[]): Buffer {
  return Buffer.concat(hashes.map((h) => Buffer.from(h.buffer, h.byteOffset, h.byteLength)));
}

export function unpackHashes(packed: Uint8Array): Hash[] {
  const hashes: Hash[] = [];
  for (let at = 0; at + HASH_SIZE <= packed.length; at += HASH_SIZE)
    hashes.push(packed.subarray(at, at + HASH_SIZE));
  return hashes;
}

/** Tiles kept in memory, 8 KiB at most each: the tree's top and its recent leaves stay there. */
const CACHED_TILES = 2048;
/** Complete subtrees' hashes kept, of TILE_HEIGHT/2 levels or more: what every proof's upper half asks. */
const CACHED_NODES = 65_536;
const MEMO_FROM_LEVEL = TILE_HEIGHT / 2;

/**
 * Tiles as stored, in one statement for the proofs of many requests at once: a hundred people
 * opening request links to one agent ask for the same tiles of the same proof.
 */
const storedTiles = batchedPerDatabase(async (db, wanted: { level: number; tile: number }[]) => {
  const keys = [...new Map(wanted.map(({ level, tile }) => [`${level}/${tile}`, [level, tile]])).values()];
  const rows = await db("log_tiles")
    .whereIn(["level", "tile"], keys)
    .select<{ level: number; tile: number | string; hashes: Uint8Array }[]>("level", "tile", "hashes");
  const byKey = new Map(rows.map((row) => [`${row.level}/${Number(row.tile)}`, row.hashes]));
  return wanted.map(({ level, tile }) => byKey.get(`${level}/${tile}`));
});

/**
 * Reads tiles from the database for proofs. The hashes of complete subtrees never change and a
 * partial tile only grows, so whatever was read stays true: tiles and computed subtree hashes are
 * kept (least recently used go first), and a partial tile is read again only when a larger tree
 * needs more of it.
 */
export class TileReader {
  private readonly tiles = new Lru<Hash[]>(CACHED_TILES);
  private readonly nodes = new Lru<Hash>(CACHED_NODES);

  constructor(private readonly db: Knex) {}

  readonly get: TileGetter = async (level, tile, length) => {
    const key = `${level}/${tile}`;
    const cached = this.tiles.get(key);
    if (cached && cached.length >= length) return cached;
    const packed = await storedTiles(this.db).call({ level, tile });
    const hashes = packed ? unpackHashes(packed) : [];
    if (hashes.length < length) {
      throw new Error(
        `tile ${key} holds ${hashes.length} hashes, ${length} needed: the tree is not that large yet`,
      );
    }
    this.tiles.set(key, hashes);
    return hashes;
  };

  /** The tree's complete subtrees, the upper ones remembered. */
  readonly subtrees: SubtreeSource = (() => {
    const fromTiles = tileSubtrees(this.get);
    return {
      complete: async (level: number, index: number) => {
        if (level < MEMO_FROM_LEVEL) return fromTiles.complete(level, index);
        const key = `${level}/${index}`;
        const known = this.nodes.get(key);
        if (known) return known;
        const hash = await fromTiles.complete(level, index);
        this.nodes.set(key, hash);
        return hash;
      },
    };
  })();
}

/** A map that forgets its least recently used entries beyond `capacity`. */
class Lru<V> {
  private readonly entries = new Map<string, V>();

  constructor(private readonly capacity: number) {}

  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
  }
}
