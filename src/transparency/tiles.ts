import { HASH_SIZE, type Hash, nodeHash, type SubtreeSource } from "@handoff/sdk/transparency";
import type { Knex } from "knex";

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

/** Full tiles never change, so they are kept; this many of them (8 KiB each). */
const CACHED_FULL_TILES = 2048;

/** Reads tiles from the database, keeping the full ones it read most lately. */
export class TileReader {
  private readonly full = new Map<string, Hash[]>();

  constructor(private readonly db: Knex) {}

  readonly get: TileGetter = async (level, tile, length) => {
    const key = `${level}/${tile}`;
    const cached = this.full.get(key);
    if (cached) {
      this.full.delete(key);
      this.full.set(key, cached);
      return cached;
    }
    const row = await this.db("log_tiles").where({ level, tile }).first<{ hashes: Uint8Array } | undefined>();
    const hashes = row ? unpackHashes(row.hashes) : [];
    if (hashes.length < length) {
      throw new Error(
        `tile ${key} holds ${hashes.length} hashes, ${length} needed: the tree is not that large yet`,
      );
    }
    if (hashes.length === TILE_WIDTH) {
      this.full.set(key, hashes);
      if (this.full.size > CACHED_FULL_TILES) this.full.delete(this.full.keys().next().value as string);
    }
    return hashes;
  };
}
