/**
 * Text checks on the decrypted stream: override patterns, hidden characters and, in HTML or SVG, active
 * content. Patterns are ASCII, so they run on the latin1 view of the bytes (one byte, one character): equal
 * to matching the decoded UTF-8 text. The chunks, of whatever size they come, are gathered into blocks of
 * `BLOCK_BYTES` (in the prefilter's memory, where they are searched), so what a block costs besides its
 * bytes is paid once per block. Each block is searched as it is, then its seam: the end of the earlier
 * text and the head of the block, whitespace runs folded to one space (which changes no match of a pattern
 * whose blanks are `\s+`), so a match cut by a block boundary, a line break or a long run of blanks is whole
 * in a bounded string. In a block, the override patterns run only around the words every match contains
 * (prefilter.ts), on windows that hold any such match whole; the findings are those of the patterns run on
 * the whole block.
 */
import { type Findings, quote } from "./findings.js";
import { asBuffer, Overlap } from "./overlap.js";
import {
  BLOCK_BYTES,
  giveBackWordSearch,
  takeWordSearch,
  type WordPlace,
  type WordSearch,
} from "./prefilter.js";
import { type HiddenRange, rules } from "./rules.js";

const blankClass = (chars: string) =>
  `[${Array.from(chars, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")}]`;
/** The whitespace runs folding changes: two blanks or more, or one that is not a space (a lone space stays). */
const changedRun = new RegExp(
  `${blankClass(rules.whitespace)}{2,}|${blankClass(rules.whitespace.replace(" ", ""))}`,
  "g",
);

function latin1(bytes: Uint8Array): string {
  return asBuffer(bytes).toString("latin1");
}

/** Folds the whitespace runs of `bytes`' text, looking at more of it (from `end`) until `chars` folded characters. */
function folded(bytes: Uint8Array, chars: number, end: "head" | "tail"): string {
  for (let span = 2 * chars; ; span *= 4) {
    const part = end === "head" ? bytes.subarray(0, span) : bytes.subarray(Math.max(0, bytes.length - span));
    const result = latin1(part).replace(changedRun, " ");
    if (result.length >= chars || span >= bytes.length) return end === "head" ? result : result.slice(-chars);
  }
}

const blank = new Uint8Array(256);
for (const c of rules.whitespace) blank[c.charCodeAt(0)] = 1;

/**
 * Where the text before `end` holds `chars` characters once its whitespace runs are folded to one: walking
 * back, a run counts once (at its last byte). `bytes[end]` is not whitespace: a prefilter word starts there.
 */
function foldedCharsBefore(bytes: Uint8Array, end: number, chars: number): number {
  let at = end;
  for (let counted = 0; at > 0 && counted < chars; ) {
    at--;
    if (blank[bytes[at] as number] === 0 || blank[bytes[at + 1] as number] === 0) counted++;
  }
  return at;
}

/** Where the text from `start` holds `chars` folded characters; `bytes[start - 1]` ends a prefilter word. */
function foldedCharsAfter(bytes: Uint8Array, start: number, chars: number): number {
  let at = start;
  for (let counted = 0; at < bytes.length && counted < chars; at++) {
    if (blank[bytes[at] as number] === 0 || blank[bytes[at - 1] as number] === 0) counted++;
  }
  return at;
}

/**
 * The bytes around the prefilter word at [start, end) that hold every match containing it: `chars` folded
 * characters (at least the longest match, folded) after it when matches start with it, before it when they
 * end with it, whitespace runs left whole.
 */
function windowAround(
  bytes: Uint8Array,
  start: number,
  end: number,
  place: WordPlace,
  chars: number,
): Uint8Array {
  return place === "starts"
    ? bytes.subarray(start, foldedCharsAfter(bytes, end, chars))
    : bytes.subarray(foldedCharsBefore(bytes, start, chars), end);
}

/** The override patterns tried at the start of a text only (sticky). */
const overrideAtStart = new RegExp(rules.override.source, `${rules.override.flags}y`);

/**
 * Whether an override pattern matches in the window of a word at `place`: where the word starts every match
 * holding it, only a match at the window's start can hold it, and only there need the patterns be tried.
 */
function windowMatches(window: string, place: WordPlace): boolean {
  if (place === "ends") return rules.override.test(window);
  overrideAtStart.lastIndex = 0;
  return overrideAtStart.test(window);
}

/** A window costs about what the patterns cost on this many bytes of a block, besides its own length. */
const WINDOW_COST_BYTES = 256;

/**
 * False when no override pattern matches in the block `bytes`, just searched by `search`; true when one does,
 * or when the prefilter words are so many that their windows would cost more than searching the whole block.
 */
function overrideMayMatch(search: WordSearch, bytes: Uint8Array): boolean {
  const chars = rules.limits.override_overlap_chars;
  let budget = bytes.length;
  return search.someWord((start, end, place) => {
    const window = windowAround(bytes, start, end, place, chars);
    budget -= WINDOW_COST_BYTES + window.length;
    return budget < 0 || windowMatches(latin1(window), place);
  });
}

/**
 * The first match of the override patterns in the latin1 text of the block `bytes`, exactly as
 * `rules.override.exec` gives it, without running them over every byte: only when a window around a
 * prefilter word matches.
 */
function firstOverride(search: WordSearch, bytes: Uint8Array): string | null {
  return overrideMayMatch(search, bytes) ? (rules.override.exec(latin1(bytes))?.[0] ?? null) : null;
}

function utf8Length(lead: number): number {
  if (lead >= 0xf0) return 4;
  if (lead >= 0xe0) return 3;
  return lead >= 0xc0 ? 2 : 1;
}

function codePointAt(bytes: Uint8Array, at: number, length: number): number | null {
  const lead = bytes[at] ?? 0;
  let cp = length === 4 ? lead & 0x07 : length === 3 ? lead & 0x0f : lead & 0x1f;
  for (let i = 1; i < length; i++) {
    const next = bytes[at + i] ?? 0;
    if ((next & 0xc0) !== 0x80) return null;
    cp = (cp << 6) | (next & 0x3f);
  }
  return cp;
}

function utf8Lead(cp: number): number {
  return Buffer.from(String.fromCodePoint(cp), "utf8")[0] ?? 0;
}

/** The UTF-8 lead bytes that can start a hidden character: only these positions are decoded. */
const hiddenLeads = [
  ...new Set(
    rules.hiddenText.flatMap((r) =>
      Array.from({ length: r.to - r.from + 1 }, (_, i) => utf8Lead(r.from + i)),
    ),
  ),
];

/** A block whose bytes are all below this holds no hidden character. */
const lowestHiddenLead = Math.min(...hiddenLeads);

function hiddenRangeOf(cp: number): HiddenRange | undefined {
  return rules.hiddenText.find((r) => cp >= r.from && cp <= r.to);
}

/** The first hidden character in `bytes` whose encoding is complete there, by position. */
function firstHidden(bytes: Buffer): { cp: number; range: HiddenRange } | null {
  let best: { at: number; cp: number; range: HiddenRange } | null = null;
  for (const lead of hiddenLeads) {
    const length = utf8Length(lead);
    for (
      let at = bytes.indexOf(lead);
      at >= 0 && at + length <= bytes.length;
      at = bytes.indexOf(lead, at + 1)
    ) {
      if (best !== null && at > best.at) break;
      const cp = codePointAt(bytes, at, length);
      const range = cp === null ? undefined : hiddenRangeOf(cp);
      if (cp !== null && range !== undefined) {
        best = { at, cp, range };
        break;
      }
    }
  }
  return best;
}

export class TextScanner {
  private tail = "";
  private readonly hiddenBytes = new Overlap(3);
  /** Holds the block being gathered, and searches it; given back at the end. */
  private readonly search = takeWordSearch();
  private gathered = 0;
  private ended = false;
  /** Folded characters kept on each side of a seam: as long as the longest match (markup tags are longer). */
  private readonly overlap: number;

  constructor(
    private readonly findings: Findings,
    private readonly markup: boolean,
  ) {
    const limits = rules.limits;
    this.overlap = markup
      ? Math.max(limits.markup_overlap_chars, limits.override_overlap_chars)
      : limits.override_overlap_chars;
  }

  feed(chunk: Uint8Array): void {
    for (let at = 0; at < chunk.length && !this.done; ) {
      const take = Math.min(chunk.length - at, BLOCK_BYTES - this.gathered);
      this.search.input.set(take === chunk.length ? chunk : chunk.subarray(at, at + take), this.gathered);
      this.gathered += take;
      at += take;
      if (this.gathered === BLOCK_BYTES) this.scanGathered();
    }
  }

  end(): void {
    if (this.ended) return;
    if (this.gathered > 0 && !this.done) this.scanGathered();
    this.ended = true;
    giveBackWordSearch(this.search);
  }

  private scanGathered(): void {
    const block = this.search.input.subarray(0, this.gathered);
    this.gathered = 0;
    this.search.search(block.length);
    this.scan(block);
  }

  /** Nothing more to search: every text finding made, or the search given back. */
  private get done(): boolean {
    return (
      this.ended ||
      (this.findings.has("prompt_injection") &&
        this.findings.has("hidden_text") &&
        (!this.markup || this.findings.has("active_content")))
    );
  }

  /** Searches the block `bytes`, which `this.search` has just searched. */
  private scan(bytes: Uint8Array): void {
    this.scanHidden(bytes);
    // The seam first: it starts earlier in the file.
    const seam = this.tail + folded(bytes, this.overlap, "head");
    if (!this.findings.has("prompt_injection")) this.reportOverride(rules.override.exec(seam)?.[0] ?? null);
    if (this.markup) this.scanMarkup(seam);
    if (!this.findings.has("prompt_injection")) this.reportOverride(firstOverride(this.search, bytes));
    if (this.markup) this.scanMarkup(latin1(bytes));
    const tail = folded(bytes, this.overlap, "tail");
    this.tail =
      tail.length >= this.overlap
        ? tail
        : folded(Buffer.from(this.tail + tail, "latin1"), this.overlap, "tail");
  }

  private scanHidden(bytes: Uint8Array): void {
    if (this.findings.has("hidden_text")) return;
    const hit =
      firstHidden(this.hiddenBytes.seam(bytes)) ??
      (this.search.highestByte() >= lowestHiddenLead ? firstHidden(asBuffer(bytes)) : null);
    if (hit === null) return;
    const code = hit.cp.toString(16).toUpperCase().padStart(4, "0");
    this.findings.add(
      "hidden_text",
      `The text holds U+${code}, ${hit.range.label}, which readers do not show.`,
    );
  }

  private reportOverride(match: string | null): void {
    if (match !== null) {
      this.findings.add("prompt_injection", `The text contains the override phrase ${quote(match)}.`);
    }
  }

  private scanMarkup(window: string): void {
    if (this.findings.has("active_content")) return;
    let first: { index: number; label: string } | null = null;
    for (const { pattern, label } of rules.markup) {
      const match = pattern.exec(window);
      if (match !== null && (first === null || match.index < first.index))
        first = { index: match.index, label };
    }
    if (first !== null) this.findings.add("active_content", `The HTML or SVG holds ${first.label}.`);
  }
}
