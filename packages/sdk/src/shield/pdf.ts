/** PDF action tokens (/JavaScript, /JS, /Launch) in the byte stream, whole across chunk boundaries. */
import type { Findings } from "./findings.js";
import { asBuffer, Overlap } from "./overlap.js";
import { rules } from "./rules.js";

const tokens = rules.pdfTokens.map((t) => Buffer.from(t, "latin1"));
/** A seam holds a whole token and the byte after it. */
const keep = Math.max(...tokens.map((t) => t.length)) + 1;

/** A PDF name ends at whitespace or a delimiter: "/JS" names JavaScript, "/JSFont" does not. */
function endsName(byte: number | undefined): boolean {
  return byte === undefined || rules.pdfTokenTerminators.has(byte);
}

/** The first token in `window` followed by a name's end; the window's end counts only when the file ends there. */
function firstToken(window: Buffer, atFileEnd: boolean): string | null {
  let first: { at: number; token: Buffer } | null = null;
  for (const token of tokens) {
    for (let at = window.indexOf(token); at >= 0; at = window.indexOf(token, at + 1)) {
      if (first !== null && at > first.at) break;
      const next = at + token.length;
      if (next === window.length && !atFileEnd) break;
      if (endsName(window[next])) {
        first = { at, token };
        break;
      }
    }
  }
  return first === null ? null : first.token.toString("latin1");
}

export class PdfTokenScanner {
  private readonly overlap = new Overlap(keep);

  constructor(private readonly findings: Findings) {}

  feed(chunk: Uint8Array): void {
    if (this.findings.has("active_content")) return;
    // The seam first: it starts earlier in the file.
    const seam = this.overlap.seam(chunk);
    this.report(firstToken(seam, false) ?? firstToken(asBuffer(chunk), false));
  }

  end(): void {
    if (this.findings.has("active_content")) return;
    this.report(firstToken(this.overlap.rest(), true));
  }

  private report(token: string | null): void {
    if (token !== null)
      this.findings.add(
        "active_content",
        `The PDF names ${token}, an action that runs when the file is opened.`,
      );
  }
}
