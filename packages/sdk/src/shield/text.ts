/**
 * Text checks on the decrypted stream: override patterns, hidden characters and, in HTML or SVG, active
 * content. Patterns are ASCII, so they run on the latin1 view of the bytes (one byte, one character): as
 * fast as V8 goes, and equal to matching the decoded UTF-8 text. Each chunk is searched as it is, then its
 * seam: the end of the earlier text and the head of the chunk, whitespace runs folded to one space (which
 * changes no match of a pattern whose blanks are `\s+`), so a match cut by a chunk boundary, a line break or
 * a long run of blanks is whole in a bounded string.
 */
import { type Findings, quote } from "./findings.js";
import { asBuffer, Overlap } from "./overlap.js";
import { type HiddenRange, rules } from "./rules.js";

const whitespaceRun = new RegExp(
  `[${Array.from(rules.whitespace, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")}]+`,
  "g",
);

function latin1(bytes: Uint8Array): string {
  return asBuffer(bytes).toString("latin1");
}

/** Folds `text`'s whitespace runs, looking at more of it (from `end`) until `chars` folded characters. */
function folded(text: string, chars: number, end: "head" | "tail"): string {
  for (let span = 2 * chars; ; span *= 4) {
    const part = end === "head" ? text.slice(0, span) : text.slice(-span);
    const result = part.replace(whitespaceRun, " ");
    if (result.length >= chars || span >= text.length) return end === "head" ? result : result.slice(-chars);
  }
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

/** Tiny chunks are gathered up to this size first: a seam per byte would cost more than the byte. */
const GATHER_BYTES = 16 * 1024;

export class TextScanner {
  private tail = "";
  private readonly hiddenBytes = new Overlap(3);
  private readonly gathered = new Uint8Array(GATHER_BYTES);
  private gatheredLength = 0;
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
    if (chunk.length >= GATHER_BYTES) {
      this.flush();
      this.scan(chunk);
      return;
    }
    if (this.gatheredLength + chunk.length > GATHER_BYTES) this.flush();
    this.gathered.set(chunk, this.gatheredLength);
    this.gatheredLength += chunk.length;
  }

  end(): void {
    this.flush();
  }

  private flush(): void {
    if (this.gatheredLength === 0) return;
    this.scan(this.gathered.subarray(0, this.gatheredLength));
    this.gatheredLength = 0;
  }

  private get done(): boolean {
    return (
      this.findings.has("prompt_injection") &&
      this.findings.has("hidden_text") &&
      (!this.markup || this.findings.has("active_content"))
    );
  }

  private scan(bytes: Uint8Array): void {
    if (this.done) return;
    this.scanHidden(bytes);
    const chunk = latin1(bytes);
    // The seam first: it starts earlier in the file.
    for (const text of [this.tail + folded(chunk, this.overlap, "head"), chunk]) {
      this.scanOverride(text);
      if (this.markup) this.scanMarkup(text);
    }
    const tail = folded(chunk, this.overlap, "tail");
    this.tail = tail.length >= this.overlap ? tail : folded(this.tail + tail, this.overlap, "tail");
  }
  private scanHidden(bytes: Uint8Array): void {
    if (this.findings.has("hidden_text")) return;
    const hit = firstHidden(this.hiddenBytes.seam(bytes)) ?? firstHidden(asBuffer(bytes));
    if (hit === null) return;
    const code = hit.cp.toString(16).toUpperCase().padStart(4, "0");
    this.findings.add(
      "hidden_text",
      `The text holds U+${code}, ${hit.range.label}, which readers do not show.`,
    );
  }

  private scanOverride(window: string): void {
    if (this.findings.has("prompt_injection")) return;
    const match = rules.override.exec(window);
    if (match !== null) {
      this.findings.add("prompt_injection", `The text contains the override phrase ${quote(match[0])}.`);
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
