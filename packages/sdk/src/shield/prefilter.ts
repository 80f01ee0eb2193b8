/**
 * Where the override patterns could match, found fast: every match of them contains one of a few words (the
 * prefilter words below), so the text scanner searches only around those words instead of running the
 * patterns over every byte. The words are found by a SIMD search in WebAssembly (prefilter.wat: three bytes of
 * each word compared by their low nibbles, sixteen positions at a time), each candidate then checked here;
 * `<|` by Buffer's native search. Memory is the module's fixed two pages: each block of a chunk is copied in.
 */
import { prefilterWasm } from "./prefilter-wasm.js";

/**
 * The words, lower case, and where in each the three searched bytes start. Every match of an override
 * pattern contains one (rules.json): `ignore|disregard|forget` start the first pattern, `disregard|reveal|
 * print|show` the second, `mode` ends the third, and the markers hold `<|` or `[inst`. They are what text
 * uses least of the patterns' words: "previous instructions", "system prompt" and "you" are everyday words
 * of text about agents. The three bytes searched are each word's rarest in English text, by low nibbles.
 */
export const PREFILTER_WORDS = [
  { word: "ignore", searchedAt: 1 },
  { word: "disregard", searchedAt: 1 },
  { word: "forget", searchedAt: 1 },
  { word: "reveal", searchedAt: 2 },
  { word: "print", searchedAt: 0 },
  { word: "show", searchedAt: 1 },
  { word: "mode", searchedAt: 0 },
  { word: "[inst", searchedAt: 0 },
] as const;
/** The other word, found natively: `<` and `|` are rare bytes, but by low nibble both are `l` (as in "all"). */
export const PREFILTER_MARKER = "<|";

const SEARCHED_BYTES = 3;

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
interface PrefilterModule {
  memory: { buffer: ArrayBuffer };
  tables: { value: number };
  candidates: { value: number };
  candidateCapacity: { value: number };
  input: { value: number };
  blockPositions: { value: number };
  scan(positions: number): number;
}

/** A word as bytes: a byte matches when it equals `lower` after OR-ing `caseBit` (0x20 for letters). */
interface Word {
  lower: Uint8Array;
  caseBit: Uint8Array;
  searchedAt: number;
}

const words: Word[] = PREFILTER_WORDS.map(({ word, searchedAt }) => ({
  lower: Buffer.from(word, "latin1"),
  caseBit: Uint8Array.from(word, (c) => (/[a-z]/.test(c) ? 0x20 : 0)),
  searchedAt,
}));
const marker = Buffer.from(PREFILTER_MARKER, "latin1");

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

interface Loaded {
  scan(positions: number): number;
  /** Views of the module's memory, which never grows. */
  memory: Uint8Array;
  entries: Uint32Array;
  /** The layout, read once (each read of a global is a call into the engine). */
  input: number;
  block: number;
  firstEntry: number;
  capacity: number;
}

let loaded: Loaded | null = null;

/**
 * One instance for the process: scanning is synchronous, so scanners never use it at the same time. None
 * where Node runs without WebAssembly (`--jitless`).
 */
function prefilterModule(): Loaded | null {
  if (loaded !== null || typeof WebAssembly === "undefined") return loaded;
  const module = new WebAssembly.Module(Buffer.from(prefilterWasm, "base64"));
  const exports = new WebAssembly.Instance(module).exports as unknown as PrefilterModule;
  const memory = new Uint8Array(exports.memory.buffer);
  memory.set(nibbleTables(), exports.tables.value);
  loaded = {
    scan: exports.scan,
    memory,
    entries: new Uint32Array(exports.memory.buffer),
    input: exports.input.value,
    block: exports.blockPositions.value,
    firstEntry: exports.candidates.value >> 2,
    capacity: exports.candidateCapacity.value,
  };
  return loaded;
}

function wordAt(bytes: Uint8Array, start: number, word: Word): boolean {
  const { lower, caseBit } = word;
  if (start < 0 || start + lower.length > bytes.length) return false;
  for (let i = 0; i < lower.length; i++) {
    if (((bytes[start + i] as number) | (caseBit[i] as number)) !== lower[i]) return false;
  }
  return true;
}

/**
 * Calls `visit(start, end)` for the prefilter words lying whole in `bytes` (in no set order), until one call
 * returns true. Returns true when one did, and also when a block held more candidates than the module lists
 * or WebAssembly is missing (then not every word was visited: the caller must treat the chunk as possibly
 * matching); false otherwise.
 */
export function someWord(bytes: Uint8Array, visit: (start: number, end: number) => boolean): boolean {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = buffer.indexOf(marker); at >= 0; at = buffer.indexOf(marker, at + 1)) {
    if (visit(at, at + marker.length)) return true;
  }
  const module = prefilterModule();
  if (module === null) return true;
  const { scan, memory, entries, input, block, firstEntry, capacity } = module;
  const positions = bytes.length - (SEARCHED_BYTES - 1);
  for (let from = 0; from < positions; from += block) {
    const count = Math.min(block, positions - from);
    memory.set(bytes.subarray(from, from + count + SEARCHED_BYTES - 1), input);
    const found = scan(count);
    if (found >= capacity) return true;
    for (let i = 0; i < found; i++) {
      const entry = entries[firstEntry + i] as number;
      const position = from + (entry >>> 8);
      for (let bits = entry & 0xff; bits !== 0; bits &= bits - 1) {
        const word = words[31 - Math.clz32(bits & -bits)] as Word;
        const start = position - word.searchedAt;
        if (wordAt(bytes, start, word) && visit(start, start + word.lower.length)) return true;
      }
    }
  }
  return false;
}
