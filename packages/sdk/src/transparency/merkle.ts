import { sha256, sha256OfText } from "./sha256.js";

/**
 * The Merkle tree of the log (decisions 9.1): RFC 6962 section 2.1 hashing, RFC 9162 sections
 * 2.1.3 and 2.1.4 for proofs. Pure: the server builds proofs from its stored subtree hashes through
 * a `SubtreeSource`, the clients verify them with nothing but the bytes.
 */

export type Hash = Uint8Array;

export const HASH_SIZE = 32;

const LEAF_PREFIX = 0x00;
const NODE_PREFIX = 0x01;

/** H(0x00 ‖ leaf). */
export function leafHash(leaf: Uint8Array): Hash {
  const input = new Uint8Array(leaf.length + 1);
  input[0] = LEAF_PREFIX;
  input.set(leaf, 1);
  return sha256(input);
}

/**
 * H(0x00 ‖ UTF-8 of `text`): leafHash of a leaf that is text, hashed without a copy of its bytes
 * (U+0000 is the one byte 0x00 in UTF-8).
 */
export function textLeafHash(text: string): Hash {
  return sha256OfText(`\u0000${text}`);
}

/** H(0x01 ‖ left ‖ right). */
export function nodeHash(left: Hash, right: Hash): Hash {
  const input = new Uint8Array(1 + 2 * HASH_SIZE);
  input[0] = NODE_PREFIX;
  input.set(left, 1);
  input.set(right, 1 + HASH_SIZE);
  return sha256(input);
}

/** The root of the empty tree: SHA-256 of nothing. */
export const EMPTY_ROOT: Hash = sha256(new Uint8Array(0));

/** The largest power of two strictly smaller than n (n ≥ 2): the size of the left subtree. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * Where the hashes of complete subtrees come from. `complete(level, index)` is the hash of the
 * 2^level leaves starting at index · 2^level, every one of them in the tree: what a store of tiles
 * or levels keeps. Everything else (the ragged right edge, proofs) is computed from these.
 */
export interface SubtreeSource {
  complete(level: number, index: number): Promise<Hash>;
}

/** MTH of the `size` leaves starting at `start`, when `start` is a multiple of the largest power of two ≤ size. */
export async function subtreeHash(source: SubtreeSource, start: number, size: number): Promise<Hash> {
  if (size < 1) throw new RangeError("an empty subtree has no hash");
  if (isPowerOfTwo(size)) return source.complete(Math.log2(size), start / size);
  const k = splitPoint(size);
  return nodeHash(await subtreeHash(source, start, k), await subtreeHash(source, start + k, size - k));
}

/** The root of the tree of `size` leaves. */
export async function treeRoot(source: SubtreeSource, size: number): Promise<Hash> {
  return size === 0 ? EMPTY_ROOT : subtreeHash(source, 0, size);
}

/** The audit path of leaf `index` in the tree of `size` leaves (RFC 6962 2.1.1 PATH), leaf side first. */
export async function inclusionProof(source: SubtreeSource, index: number, size: number): Promise<Hash[]> {
  if (!(index >= 0 && index < size)) throw new RangeError(`leaf ${index} is not in a tree of ${size}`);
  const proof: Hash[] = [];
  let start = 0;
  let n = size;
  let m = index;
  const siblings: Array<[number, number]> = [];
  while (n > 1) {
    const k = splitPoint(n);
    if (m < k) {
      siblings.push([start + k, n - k]);
      n = k;
    } else {
      siblings.push([start, k]);
      start += k;
      m -= k;
      n -= k;
    }
  }
  // PATH lists the deepest sibling first.
  for (const [from, count] of siblings.reverse()) proof.push(await subtreeHash(source, from, count));
  return proof;
}

/** The consistency proof between the trees of `from` and `to` leaves (RFC 6962 2.1.2 PROOF), 0 < from ≤ to. */
export async function consistencyProof(source: SubtreeSource, from: number, to: number): Promise<Hash[]> {
  if (!(from > 0 && from <= to)) throw new RangeError(`no consistency proof from ${from} to ${to}`);
  const parts: Array<[number, number]> = [];
  let start = 0;
  let m = from;
  let n = to;
  let whole = true;
  while (m !== n) {
    const k = splitPoint(n);
    if (m <= k) {
      parts.push([start + k, n - k]);
      n = k;
    } else {
      parts.push([start, k]);
      start += k;
      m -= k;
      n -= k;
      whole = false;
    }
  }
  // SUBPROOF(m, D[m], b): nothing when the old tree is a whole subtree we started from, else its hash.
  if (!whole) parts.push([start, m]);
  const proof: Hash[] = [];
  for (const [first, count] of parts.reverse()) proof.push(await subtreeHash(source, first, count));
  return proof;
}

/** RFC 9162 2.1.3.2: does `proof` put the leaf with this hash at `index` of a tree of `size` with this root? */
export function verifyInclusion(
  hash: Hash,
  index: number,
  size: number,
  proof: readonly Hash[],
  root: Hash,
): boolean {
  if (!(Number.isSafeInteger(index) && Number.isSafeInteger(size) && index >= 0 && index < size))
    return false;
  let fn = index;
  let sn = size - 1;
  let r = hash;
  for (const p of proof) {
    if (sn === 0 || p.length !== HASH_SIZE) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && equalHashes(r, root);
}

/** RFC 9162 2.1.4.2: is the tree of `to` leaves with `toRoot` an extension of the one of `from` with `fromRoot`? */
export function verifyConsistency(
  from: number,
  to: number,
  fromRoot: Hash,
  toRoot: Hash,
  proof: readonly Hash[],
): boolean {
  if (!(Number.isSafeInteger(from) && Number.isSafeInteger(to) && from > 0 && from <= to)) return false;
  if (from === to) return proof.length === 0 && equalHashes(fromRoot, toRoot);
  if (proof.some((p) => p.length !== HASH_SIZE)) return false;
  const path = isPowerOfTwo(from) ? [fromRoot, ...proof] : [...proof];
  const [seed, ...rest] = path;
  if (!seed) return false;
  let fn = from - 1;
  let sn = to - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = seed;
  let sr = seed;
  for (const c of rest) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && equalHashes(fr, fromRoot) && equalHashes(sr, toRoot);
}

/** A source over leaf hashes held in memory: for tests, the offline verifier and small trees. */
export function leavesSource(leafHashes: readonly Hash[]): SubtreeSource {
  const complete = (level: number, index: number): Hash => {
    if (level === 0) {
      const leaf = leafHashes[index];
      if (!leaf) throw new RangeError(`no leaf ${index}`);
      return leaf;
    }
    return nodeHash(complete(level - 1, 2 * index), complete(level - 1, 2 * index + 1));
  };
  return { complete: async (level, index) => complete(level, index) };
}

export function equalHashes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return difference === 0;
}

function isPowerOfTwo(n: number): boolean {
  return n >= 1 && Number.isInteger(Math.log2(n));
}

/**
 * The right edge of a tree being built leaf by leaf: the roots of its complete subtrees, largest
 * first (the binary digits of its size). Memory is logarithmic in the size, and the root of the
 * tree so far is one fold away: what a verifier recomputing a whole log needs.
 */
export class CompactRange {
  private readonly subtrees: { size: number; hash: Hash }[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  append(hash: Hash): void {
    let merged = { size: 1, hash };
    for (let top = this.subtrees.at(-1); top && top.size === merged.size; top = this.subtrees.at(-1)) {
      this.subtrees.pop();
      merged = { size: top.size * 2, hash: nodeHash(top.hash, merged.hash) };
    }
    this.subtrees.push(merged);
    this.count++;
  }

  root(): Hash {
    let hash: Hash | null = null;
    for (let i = this.subtrees.length - 1; i >= 0; i--) {
      const left = (this.subtrees[i] as { hash: Hash }).hash;
      hash = hash ? nodeHash(left, hash) : left;
    }
    return hash ?? EMPTY_ROOT;
  }
}
