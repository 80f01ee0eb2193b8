import {
  consistencyProof,
  inclusionProof,
  leafHash,
  leavesSource,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
} from "@handoff/sdk/transparency";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TreeEdge, writeChanges } from "../../src/transparency/edge.js";
import { TILE_WIDTH, TileReader, tileSubtrees } from "../../src/transparency/tiles.js";
import { migratedDatabase, type TestDatabase } from "../support/databases.js";

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const leaves = Array.from({ length: TILE_WIDTH * TILE_WIDTH + 700 }, (_, i) =>
  leafHash(new TextEncoder().encode(`e${i}`)),
);
const position = (i: number) => `p${String(i).padStart(8, "0")}`;

describe("the tree as tiles in the database", () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await migratedDatabase("pglite");
  });
  afterAll(async () => t?.close());

  it("grows across tile boundaries of two levels, restarts from its edge, and proves what an in-memory tree proves", async () => {
    const memory = leavesSource(leaves);
    const sizes = [
      1,
      255,
      256,
      257,
      1000,
      TILE_WIDTH * TILE_WIDTH - 1,
      TILE_WIDTH * TILE_WIDTH,
      leaves.length,
    ];
    let written = 0;
    for (const size of sizes) {
      // A new edge for each batch: what the hasher loads after a restart.
      const edge = await TreeEdge.load(t.db, new TileReader(t.db));
      expect(edge.size).toBe(written);
      for (; written < size; written++) edge.append(leaves[written] as Uint8Array, position(written));
      const changes = edge.takeChanges();
      expect(await t.db.transaction((trx) => writeChanges(trx, changes))).toBe(true);
      expect(hex(await edge.root())).toBe(hex(await treeRoot(memory, size)));

      const tiles = tileSubtrees(new TileReader(t.db).get);
      expect(hex(await treeRoot(tiles, size))).toBe(hex(await treeRoot(memory, size)));
      const root = await treeRoot(tiles, size);
      for (const index of [0, Math.floor(size / 2), size - 1]) {
        const proof = await inclusionProof(tiles, index, size);
        expect(proof.map(hex)).toEqual((await inclusionProof(memory, index, size)).map(hex));
        expect(verifyInclusion(leaves[index] as Uint8Array, index, size, proof, root)).toBe(true);
      }
      const from = Math.max(1, Math.floor(size / 3));
      const consistency = await consistencyProof(tiles, from, size);
      expect(verifyConsistency(from, size, await treeRoot(memory, from), root, consistency)).toBe(true);
    }
  }, 120_000);

  it("keeps every leaf's position in leaf order, 256 to a row", async () => {
    const rows = await t
      .db("log_leaf_positions")
      .orderBy("tile")
      .select("tile", "first_position", "positions");
    const all = rows.flatMap((row) => row.positions.split("\n"));
    expect(all).toHaveLength(leaves.length);
    expect(all.every((p, i) => p === position(i))).toBe(true);
    expect(rows.every((row) => row.first_position === row.positions.split("\n")[0])).toBe(true);
  });

  it("refuses a second writer that loaded the edge before the first wrote", async () => {
    const first = await TreeEdge.load(t.db, new TileReader(t.db));
    const second = await TreeEdge.load(t.db, new TileReader(t.db));
    first.append(leafHash(new Uint8Array([1])), "q1");
    second.append(leafHash(new Uint8Array([2])), "q2");
    expect(await t.db.transaction((trx) => writeChanges(trx, first.takeChanges()))).toBe(true);
    expect(await t.db.transaction((trx) => writeChanges(trx, second.takeChanges()))).toBe(false);
  });

  it("stores about 32 bytes of hashes per leaf", async () => {
    const { rows } = await t.db.raw<{ rows: { bytes: string }[] }>(
      "select sum(octet_length(hashes))::text as bytes from log_tiles",
    );
    const perLeaf = Number(rows[0]?.bytes) / (leaves.length + 1);
    expect(perLeaf).toBeGreaterThanOrEqual(32);
    expect(perLeaf).toBeLessThan(33);
  });
});
