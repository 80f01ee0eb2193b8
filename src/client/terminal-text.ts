/**
 * Whether a terminal would act on this code point instead of showing it: C0 controls (ESC starts
 * the sequences that set a window title or clear the screen), DEL, C1 controls (0x9b is a CSI on
 * its own), and the bidirectional marks, embeddings, overrides and isolates that reorder what the
 * reader sees around them.
 */
function actsOnTerminal(code: number): boolean {
  return (
    code < 0x20 ||
    (code >= 0x7f && code <= 0x9f) ||
    code === 0x061c ||
    code === 0x200e ||
    code === 0x200f ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069)
  );
}

const escaped = (code: number) => `\\u${code.toString(16).padStart(4, "0")}`;

/**
 * Text a sender (or any server) controls, made safe to print on a terminal: every character a
 * terminal would act on is written as `\uXXXX`, the way the JSON on stdout shows it. `keepNewlines`
 * keeps line breaks of multi-line text (a CSV report). Every client line bound for stderr or a
 * terminal goes through here.
 */
export function terminalSafe(text: string, { keepNewlines = false } = {}): string {
  let safe = "";
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    safe += actsOnTerminal(code) && !(keepNewlines && char === "\n") ? escaped(code) : char;
  }
  return safe;
}

/**
 * JSON text with the characters JSON.stringify leaves raw (DEL, C1 controls, bidirectional marks)
 * escaped as well: the same JSON value, safe on a terminal. They can only occur inside strings,
 * where `\uXXXX` means the same character.
 */
export function terminalSafeJson(json: string): string {
  return terminalSafe(json, { keepNewlines: true });
}
