import { type Hash, treeRoot } from "@handoff/sdk/transparency";
import type { Knex } from "knex";
import type { Position } from "../eventstore/port.js";
import { hashUp, packHashes, TILE_HEIGHT, TILE_WIDTH, type TileReader, tileSubtrees } from "./tiles.js";

interface EdgeTile {
  tile: number;
  hashes: Hash[];
}

/** What a batch of appends changed, to be written in one transaction. */
export interface EdgeChanges {
  from: number;
  to: number;
  position: Position | null;
  tiles: { level: number; tile: number; hashes: Buffer }[];
  positions: { tile: number; first_position: string; positions: string }[];
}

/**
 * The growing right edge of the tree, held by the hasher: the last tile of each level and the
 * positions of the last leaf tile. Leaves are appended here and the changed tiles written in one go;
 * the root of the tree so far is computed from the edge alone.
 */
export class TreeEdge {
  private changedTiles = new Map<string, { level: number; edge: EdgeTile }>();
  private positionsChanged = false;
  /** Leaf-position rows filled since the last write. */
  private positionsFull: { tile: number; positions: string[] }[] = [];
  private flushedSize: number;

  private constructor(
    private count: number,
    private position: Position | null,
    private readonly levels: EdgeTile[],
    private leafPositions: { tile: number; positions: string[] },
    private readonly tiles: TileReader,
  ) {
    this.flushedSize = count;
  }

  get size(): number {
    return this.count;
  }

  get lastPosition(): Position | null {
    return this.position;
  }

  static async load(db: Knex, tiles: TileReader): Promise<TreeEdge> {
    const state = await db("log_state")
      .where({ id: 1 })
      .first<{ size: string | number; position: string | null }>();
    const size = Number(state?.size ?? 0);
    const levels: EdgeTile[] = [];
    for (let level = 0, entries = size; entries > 0; level++, entries = Math.floor(entries / TILE_WIDTH)) {
      const tile = Math.floor(entries / TILE_WIDTH);
      const count = entries % TILE_WIDTH;
      const hashes = count === 0 ? [] : (await tiles.get(level, tile, count)).slice(0, count);
      levels.push({ tile, hashes });
    }
    const leafTile = Math.floor(size / TILE_WIDTH);
    const row =
      size % TILE_WIDTH === 0
        ? undefined
        : await db("log_leaf_positions").where({ tile: leafTile }).first<{ positions: string } | undefined>();
    const positions = row ? row.positions.split("\n").slice(0, size % TILE_WIDTH) : [];
    return new TreeEdge(size, state?.position ?? null, levels, { tile: leafTile, positions }, tiles);
  }

  append(leaf: Hash, position: Position): void {
    this.leafPositions.positions.push(position);
    this.positionsChanged = true;
    this.count++;
    this.position = position;
    let hash = leaf;
    for (let level = 0; ; level++) {
      const edge = this.levels[level] ?? { tile: 0, hashes: [] };
      this.levels[level] = edge;
      edge.hashes.push(hash);
      this.changedTiles.set(`${level}/${edge.tile}`, { level, edge });
      if (edge.hashes.length < TILE_WIDTH) break;
      hash = hashUp(edge.hashes, TILE_HEIGHT);
      this.levels[level] = { tile: edge.tile + 1, hashes: [] };
    }
    if (this.leafPositions.positions.length === TILE_WIDTH) {
      this.positionsFull.push(this.leafPositions);
      this.leafPositions = { tile: this.leafPositions.tile + 1, positions: [] };
    }
  }

  /** What changed since the last call, as rows; the edge then counts them as written. */
  takeChanges(): EdgeChanges {
    const tiles = [...this.changedTiles.values()].map(({ level, edge }) => ({
      level,
      tile: edge.tile,
      hashes: packHashes(edge.hashes),
    }));
    const rows = [...this.positionsFull, ...(this.positionsChanged ? [this.leafPositions] : [])]
      .filter((row) => row.positions.length > 0)
      .map((row) => ({
        tile: row.tile,
        first_position: row.positions[0] as string,
        positions: row.positions.join("\n"),
      }));
    const changes = {
      from: this.flushedSize,
      to: this.count,
      position: this.position,
      tiles,
      positions: rows,
    };
    this.changedTiles = new Map();
    this.positionsFull = [];
    this.positionsChanged = false;
    this.flushedSize = this.count;
    return changes;
  }

  /** The root of the tree of every leaf appended so far. */
  root(): Promise<Hash> {
    return treeRoot(
      tileSubtrees(async (level, tile, length) => {
        const edge = this.levels[level];
        return edge && edge.tile === tile ? edge.hashes : this.tiles.get(level, tile, length);
      }),
      this.count,
    );
  }
}

/** Writes what a batch changed, if the log is still where this edge found it; false when another writer moved it. */
export async function writeChanges(trx: Knex.Transaction, changes: EdgeChanges): Promise<boolean> {
  const moved = await trx("log_state")
    .where({ id: 1, size: changes.from })
    .update({ size: changes.to, position: changes.position });
  if (moved !== 1) return false;
  if (changes.tiles.length > 0)
    await trx("log_tiles").insert(changes.tiles).onConflict(["level", "tile"]).merge();
  if (changes.positions.length > 0) {
    await trx("log_leaf_positions").insert(changes.positions).onConflict("tile").merge();
  }
  return true;
}
