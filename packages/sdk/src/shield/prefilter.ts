/**
 * Where the override patterns could match, found fast: every match of them contains one of a few words (the
 * prefilter words below), so the text scanner searches only around those words instead of running the
 * patterns over every byte. The words are found by a SIMD search in WebAssembly (prefilter.wat: three bytes of
 * each word compared by their low nibbles, sixteen positions at a time), each candidate then checked here;
 * `<|` by Buffer's native search, only in a block the SIMD pass saw a `<` in. Each text scanner has its own
 * instance, whose fixed memory holds the block of text being gathered: the chunks are copied in once.
 */
import { prefilterWasm } from "./prefilter-wasm.js";

/** Where a word lies in every match of the override patterns that holds it: at the match's start or end. */
export type WordPlace = "starts" | "ends";

/**
 * The words, lower case, where they lie in a match, and where in each the three searched bytes start. Every
 * match of an override pattern contains one (rules.json): `ignore|disregard|forget` start the first
 * pattern, `disregard|reveal|print|show` the second, `mode` ends the third, and the markers hold `<|` or
 * `[inst`. They are what text uses least of the patterns' words: "previous instructions", "system prompt"
 * and "you" are everyday words of text about agents. The three bytes searched are each word's rarest in
 * English text, by low nibbles.
 */
export const PREFILTER_WORDS = [
  { word: "ignore", place: "starts", searchedAt: 1 },
  { word: "disregard", place: "starts", searchedAt: 1 },
  { word: "forget", place: "starts", searchedAt: 1 },
  { word: "reveal", place: "starts", searchedAt: 2 },
  { word: "print", place: "starts", searchedAt: 0 },
  { word: "show", place: "starts", searchedAt: 1 },
  { word: "mode", place: "ends", searchedAt: 0 },
  { word: "[inst", place: "starts", searchedAt: 0 },
] as const;
/** The other word, found natively: `<` and `|` are rare bytes, but by low nibble both are `l` (as in "all"). */
export const PREFILTER_MARKER = { word: "<|", place: "starts" } as const;

/** Called with each prefilter word found: its bytes' range and its place in a match; true stops the search. */
export type WordVisit = (start: number, end: number, place: WordPlace) => boolean;

const SEARCHED_BYTES = 3;
/** The notes are vectors of this many lanes. */
const LANES = 16;

/** The little of the WebAssembly API used here (the project's TypeScript libraries do not declare it). */
declare namespace WebAssembly {
  class Module {
    constructor(bytes: Uint8Array);
  }
  class Instance {
    constructor(module: Module);
    readonly exports: unknown;
  }
}

/** prefilter.wat's exports: its memory, the addresses of its layout (globals), and the search. */
interface PrefilterExports {
  memory: { buffer: ArrayBuffer };
  tables: { value: number };
  rareByte: { value: number };
  highest: { value: number };
  rareLanes: { value: number };
  candidates: { value: number };
  candidateCapacity: { value: number };
  input: { value: number };
  blockBytes: { value: number };
  stepBytes: { value: number };
  scan(positions: number): number;
}

/** A word as bytes: a byte matches when it equals `lower` after OR-ing `caseBit` (0x20 for letters). */
interface Word {
  lower: Uint8Array;
  caseBit: Uint8Array;
  place: WordPlace;
  searchedAt: number;
}

const words: Word[] = PREFILTER_WORDS.map(({ word, place, searchedAt }) => ({
  lower: Buffer.from(word, "latin1"),
  caseBit: Uint8Array.from(word, (c) => (/[a-z]/.test(c) ? 0x20 : 0)),
  place,
  searchedAt,
}));
const marker = Buffer.from(PREFILTER_MARKER.word, "latin1");

/** Table q, entry n: the bits of the words (bit i for word i) whose searched byte q has low nibble n. */
function nibbleTables(): Uint8Array {
  if (words.length > 8) throw new Error("the prefilter searches eight words at most (a bit each in a byte)");
  const tables = new Uint8Array(16 * SEARCHED_BYTES);
  for (const [bit, word] of words.entries()) {
    for (let q = 0; q < SEARCHED_BYTES; q++) {
      const byte = word.lower[word.searchedAt + q];
      if (byte === undefined) throw new Error("a prefilter word is shorter than its searched bytes");
      const entry = 16 * q + (byte & 0x0f);
      tables[entry] = (tables[entry] as number) | (1 << bit);
    }
  }
  return tables;
}

function wordAt(bytes: Uint8Array, start: number, word: Word): boolean {
  const { lower, caseBit } = word;
  if (start < 0 || start + lower.length > bytes.length) return false;
  for (let i = 0; i < lower.length; i++) {
    if (((bytes[start + i] as number) | (caseBit[i] as number)) !== lower[i]) return false;
  }
  return true;
}

/** A block of text to search: written into `input`, searched once by `search`, then asked about. */
export interface WordSearch {
  /** Where the block is written; a block is at most this long. */
  readonly input: Uint8Array;
  /** Searches the first `length` bytes of `input` (the block); the answers below are about them. */
  search(length: number): void;
  /** The largest byte the block holds, or more. */
  highestByte(): number;
  /**
   * Calls `visit` for the prefilter words lying whole in the block (in no set order), until one
   * call returns true. Returns true when one did, and also when the block held more candidates than the
   * module lists or WebAssembly is missing (then not every word was visited: the caller must treat the
   * block as possibly matching); false otherwise.
   */
  someWord(visit: WordVisit): boolean;
}

/** Bytes gathered and searched in blocks this long (the module's input): per-block costs count once a block. */
export const BLOCK_BYTES = 256 * 1024;

let compiled: WebAssembly.Module | null = null;

class SimdWordSearch implements WordSearch {
  readonly input: Uint8Array;
  private readonly memory: Uint8Array;
  private readonly entries: Uint32Array;
  private readonly scan: (positions: number) => number;
  /** The layout, read once (each read of a global is a call into the engine). */
  private readonly highest: number;
  private readonly rareLanes: number;
  private readonly firstEntry: number;
  private readonly capacity: number;
  /** The notes take in the whole of the last step: the bytes after a block are zeroed so as not to count. */
  private readonly step: number;
  private length = 0;
  private found = 0;

  constructor(module: WebAssembly.Module) {
    const exports = new WebAssembly.Instance(module).exports as unknown as PrefilterExports;
    if (exports.blockBytes.value !== BLOCK_BYTES) throw new Error("prefilter.wat's block is not BLOCK_BYTES");
    this.memory = new Uint8Array(exports.memory.buffer);
    this.memory.set(nibbleTables(), exports.tables.value);
    this.memory[exports.rareByte.value] = marker[0] as number;
    this.entries = new Uint32Array(exports.memory.buffer);
    this.input = this.memory.subarray(exports.input.value, exports.input.value + BLOCK_BYTES);
    this.scan = exports.scan;
    this.highest = exports.highest.value;
    this.rareLanes = exports.rareLanes.value;
    this.firstEntry = exports.candidates.value >> 2;
    this.capacity = exports.candidateCapacity.value;
    this.step = exports.stepBytes.value;
  }

  search(length: number): void {
    const end = this.input.byteOffset + length;
    this.memory.fill(0, end, end + this.step);
    this.length = length;
    this.found = this.scan(length);
  }

  /** The notes cover the whole block only when the pass was not cut short by too many candidates. */
  private get complete(): boolean {
    return this.found < this.capacity;
  }

  highestByte(): number {
    if (!this.complete) return 0xff;
    let highest = 0;
    for (let i = 0; i < LANES; i++) highest = Math.max(highest, this.memory[this.highest + i] as number);
    return highest;
  }

  private mayHoldMarker(): boolean {
    for (let i = 0; i < LANES; i++) if (this.memory[this.rareLanes + i] !== 0) return true;
    return false;
  }

  someWord(visit: WordVisit): boolean {
    if (!this.complete) return true;
    const bytes = this.input.subarray(0, this.length);
    if (this.mayHoldMarker()) {
      const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      for (let at = buffer.indexOf(marker); at >= 0; at = buffer.indexOf(marker, at + 1)) {
        if (visit(at, at + marker.length, PREFILTER_MARKER.place)) return true;
      }
    }
    for (let i = 0; i < this.found; i++) {
      const entry = this.entries[this.firstEntry + i] as number;
      const position = entry >>> 8;
      for (let bits = entry & 0xff; bits !== 0; bits &= bits - 1) {
        const word = words[31 - Math.clz32(bits & -bits)] as Word;
        const start = position - word.searchedAt;
        if (wordAt(bytes, start, word) && visit(start, start + word.lower.length, word.place)) return true;
      }
    }
    return false;
  }
}

/** Where Node runs without WebAssembly (`--jitless`): no answers, so every block is searched whole. */
class UnknownWordSearch implements WordSearch {
  readonly input = new Uint8Array(BLOCK_BYTES);
  search(): void {}
  highestByte(): number {
    return 0xff;
  }
  someWord(): boolean {
    return true;
  }
}

function createWordSearch(): WordSearch {
  if (typeof WebAssembly === "undefined") return new UnknownWordSearch();
  compiled ??= new WebAssembly.Module(Buffer.from(prefilterWasm, "base64"));
  return new SimdWordSearch(compiled);
}

/** Searches given back, for the next text files: making one (an instance of the module) takes about 0.1 ms. */
const idle: WordSearch[] = [];
const IDLE_KEPT = 2;

/** A search with a block of its own until it is given back, so that files scanned at once never share one. */
export function takeWordSearch(): WordSearch {
  return idle.pop() ?? createWordSearch();
}

/** Gives back a search its scanner is done with (a scanner that fails midway simply drops its own). */
export function giveBackWordSearch(search: WordSearch): void {
  if (idle.length < IDLE_KEPT) idle.push(search);
}
