import { createRequire } from "node:module";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CompactRange,
  consistencyProof,
  EMPTY_ROOT,
  inclusionProof,
  leafHash,
  leavesSource,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
} from "../../src/transparency/index.js";

// Sigstore's verifier, written by others, checks the same proofs: ours could agree with itself and
// still be wrong. It is a CommonJS module outside the package's public entry, so it is required by path.
const { verifyMerkleInclusion } = createRequire(import.meta.url)("@sigstore/verify/dist/tlog/merkle") as {
  verifyMerkleInclusion(
    entry: { canonicalizedBody: Buffer; inclusionProof: { logIndex: string; hashes: Buffer[] } },
    checkpoint: { logSize: string; logHash: Buffer },
  ): void;
};

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const fromHex = (text: string) => new Uint8Array(Buffer.from(text, "hex"));

// The eight leaves of RFC 6962's reference tests (certificate-transparency's merkle_tree tests).
const LEAVES = [
  "",
  "00",
  "10",
  "2021",
  "3031",
  "40414243",
  "5051525354555657",
  "606162636465666768696a6b6c6d6e6f",
].map(fromHex);
const ROOTS = [
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];
const source = leavesSource(LEAVES.map(leafHash));

function randomLeaves(count: number, seed: number): Uint8Array[] {
  return Array.from({ length: count }, (_, i) => new TextEncoder().encode(`leaf ${seed} ${i}`));
}

function flipBit(hashes: Uint8Array[], which: number, bit: number): Uint8Array[] {
  return hashes.map((h, i) => {
    if (i !== which) return h;
    const copy = h.slice();
    copy[bit >> 3] = (copy[bit >> 3] ?? 0) ^ (1 << (bit & 7));
    return copy;
  });
}

describe("the log's Merkle tree (RFC 6962)", () => {
  it("has the reference roots for the published eight-leaf tree and its prefixes", async () => {
    expect(hex(await treeRoot(source, 0))).toBe(hex(EMPTY_ROOT));
    expect(hex(EMPTY_ROOT)).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    for (let size = 1; size <= 8; size++) expect(hex(await treeRoot(source, size))).toBe(ROOTS[size - 1]);
  });

  it("has the reference audit paths and consistency proofs", async () => {
    expect((await inclusionProof(source, 0, 8)).map(hex)).toEqual([
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ]);
    expect((await inclusionProof(source, 5, 8)).map(hex)).toEqual([
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ]);
    expect((await consistencyProof(source, 1, 8)).map(hex)).toEqual([
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ]);
    expect((await consistencyProof(source, 6, 8)).map(hex)).toEqual([
      "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ]);
    expect((await consistencyProof(source, 2, 5)).map(hex)).toEqual([
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    ]);
  });

  it("makes inclusion proofs that Sigstore's verifier accepts, and it refuses a flipped bit", async () => {
    const leaves = randomLeaves(77, 1);
    const tree = leavesSource(leaves.map(leafHash));
    for (const size of [1, 2, 3, 31, 64, 77]) {
      const root = Buffer.from(await treeRoot(tree, size));
      for (let index = 0; index < size; index += Math.max(1, Math.floor(size / 7))) {
        const proof = await inclusionProof(tree, index, size);
        const entry = (hashes: Uint8Array[]) => ({
          canonicalizedBody: Buffer.from(leaves[index] ?? []),
          inclusionProof: { logIndex: String(index), hashes: hashes.map((h) => Buffer.from(h)) },
        });
        expect(() =>
          verifyMerkleInclusion(entry(proof), { logSize: String(size), logHash: root }),
        ).not.toThrow();
        if (proof.length > 0) {
          expect(() =>
            verifyMerkleInclusion(entry(flipBit(proof, proof.length - 1, 9)), {
              logSize: String(size),
              logHash: root,
            }),
          ).toThrow();
        }
      }
    }
  });

  it("verifies every inclusion and consistency proof of random trees up to 5,000 leaves, and no flipped bit", async () => {
    const leaves = randomLeaves(5000, 2);
    const tree = leavesSource(leaves.map(leafHash));
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5000 }).chain((size) =>
          fc.record({
            size: fc.constant(size),
            index: fc.integer({ min: 0, max: size - 1 }),
            from: fc.integer({ min: 1, max: size }),
            bit: fc.integer({ min: 0, max: 255 }),
          }),
        ),
        async ({ size, index, from, bit }) => {
          const root = await treeRoot(tree, size);
          const leaf = leafHash(leaves[index] ?? new Uint8Array());
          const proof = await inclusionProof(tree, index, size);
          expect(verifyInclusion(leaf, index, size, proof, root)).toBe(true);
          for (let which = 0; which < proof.length; which++) {
            expect(verifyInclusion(leaf, index, size, flipBit(proof, which, bit), root)).toBe(false);
          }
          expect(verifyInclusion(flipBit([leaf], 0, bit)[0] as Uint8Array, index, size, proof, root)).toBe(
            false,
          );

          const fromRoot = await treeRoot(tree, from);
          const consistency = await consistencyProof(tree, from, size);
          expect(verifyConsistency(from, size, fromRoot, root, consistency)).toBe(true);
          for (let which = 0; which < consistency.length; which++) {
            expect(verifyConsistency(from, size, fromRoot, root, flipBit(consistency, which, bit))).toBe(
              false,
            );
          }
          if (from < size) {
            expect(
              verifyConsistency(from, size, flipBit([fromRoot], 0, bit)[0] as Uint8Array, root, consistency),
            ).toBe(false);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("checks every proof of every small tree exhaustively", async () => {
    const leaves = randomLeaves(40, 3);
    const tree = leavesSource(leaves.map(leafHash));
    for (let size = 1; size <= 40; size++) {
      const root = await treeRoot(tree, size);
      for (let index = 0; index < size; index++) {
        const proof = await inclusionProof(tree, index, size);
        expect(verifyInclusion(leafHash(leaves[index] ?? new Uint8Array()), index, size, proof, root)).toBe(
          true,
        );
      }
      for (let from = 1; from <= size; from++) {
        const proof = await consistencyProof(tree, from, size);
        expect(verifyConsistency(from, size, await treeRoot(tree, from), root, proof)).toBe(true);
      }
    }
  });

  it("folds a compact range to the root of every size it passes", async () => {
    const leaves = randomLeaves(600, 4).map(leafHash);
    const tree = leavesSource(leaves);
    const range = new CompactRange();
    expect(hex(range.root())).toBe(hex(EMPTY_ROOT));
    for (const [i, leaf] of leaves.entries()) {
      range.append(leaf);
      if (i % 37 === 0 || i === leaves.length - 1)
        expect(hex(range.root())).toBe(hex(await treeRoot(tree, i + 1)));
    }
    expect(range.size).toBe(600);
  });

  it("refuses proofs for leaves and sizes outside the tree", async () => {
    await expect(inclusionProof(source, 8, 8)).rejects.toThrow(RangeError);
    await expect(consistencyProof(source, 0, 8)).rejects.toThrow(RangeError);
    await expect(consistencyProof(source, 5, 4)).rejects.toThrow(RangeError);
    const root = await treeRoot(source, 8);
    expect(verifyInclusion(leafHash(LEAVES[0] as Uint8Array), 8, 8, [], root)).toBe(false);
    expect(verifyConsistency(0, 8, EMPTY_ROOT, root, [])).toBe(false);
  });
});
