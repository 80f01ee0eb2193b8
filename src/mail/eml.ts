/**
 * The outbox's .eml files as people read them: a link copied out of one must work. nodemailer
 * writes a text body with long lines (every link with a token) as quoted-printable, which breaks
 * lines with `=` and turns `token=` into `token=3D`; the outbox keeps such bodies decoded as 8bit
 * instead (valid MIME: lines stay far below the 998-octet limit), and `handoff outbox` reads both.
 */

const QUOTED_PRINTABLE = /^Content-Transfer-Encoding:\s*quoted-printable\s*$/im;
const HEADER_END = /\r?\n\r?\n/;

/** Undoes quoted-printable: soft line breaks and `=XX` escapes, as bytes, read as UTF-8. */
export function decodeQuotedPrintable(text: string): string {
  const bytes: number[] = [];
  const source = Buffer.from(text.replace(/=\r?\n/g, ""), "utf8");
  for (let i = 0; i < source.length; i++) {
    const hex = source.subarray(i + 1, i + 3).toString("latin1");
    if (source[i] === 0x3d && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else bytes.push(source[i] ?? 0);
  }
  return Buffer.from(bytes).toString("utf8");
}

/** A message split at its blank line; headers unfolded (continuation lines joined). */
function split(message: string): { head: string; body: string } {
  const match = HEADER_END.exec(message);
  if (!match) return { head: message, body: "" };
  return { head: message.slice(0, match.index), body: message.slice(match.index + match[0].length) };
}

/** A single-part quoted-printable message with its body decoded and declared 8bit; others as they are. */
export function readableMessage(message: Buffer): Buffer {
  const { head, body } = split(message.toString("utf8"));
  if (!QUOTED_PRINTABLE.test(head) || /^Content-Type:\s*multipart\//im.test(head)) return message;
  const newline = head.includes("\r\n") ? "\r\n" : "\n";
  const decoded = head.replace(QUOTED_PRINTABLE, "Content-Transfer-Encoding: 8bit");
  return Buffer.from(`${decoded}${newline}${newline}${decodeQuotedPrintable(body)}`, "utf8");
}

/** RFC 2047 encoded words (`=?UTF-8?Q?…?=`, `=?UTF-8?B?…?=`) in a header value, decoded. */
function decodeWords(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, "?==?")
    .replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g, (_, _charset: string, kind: string, text: string) =>
      kind.toUpperCase() === "B"
        ? Buffer.from(text, "base64").toString("utf8")
        : decodeQuotedPrintable(text.replaceAll("_", " ")),
    );
}

export interface OutboxMessage {
  /** The message's Date header, as ISO time; null when it has none. */
  date: string | null;
  to: string;
  subject: string;
  /** X-Service-Email-Type: verify, invite, nudge, files-ready, … */
  type: string | null;
  /** The body as text, decoded. */
  text: string;
  /** Every http(s) link in the body, whole. */
  links: string[];
}

/** Reads one .eml file the outbox wrote (quoted-printable, base64, 7bit or 8bit single-part text). */
export function parseMessage(raw: string): OutboxMessage {
  const { head, body } = split(raw);
  const unfolded = head.replace(/\r?\n[ \t]+/g, " ");
  const header = (name: string) =>
    new RegExp(`^${name}:[ \\t]*(.*)$`, "im").exec(unfolded)?.[1]?.trim() ?? null;
  const encoding = (header("Content-Transfer-Encoding") ?? "").toLowerCase();
  const text =
    encoding === "quoted-printable"
      ? decodeQuotedPrintable(body)
      : encoding === "base64"
        ? Buffer.from(body, "base64").toString("utf8")
        : body;
  const date = header("Date");
  return {
    date: date && !Number.isNaN(Date.parse(date)) ? new Date(date).toISOString() : null,
    to: decodeWords(header("To") ?? ""),
    subject: decodeWords(header("Subject") ?? ""),
    type: header("X-Service-Email-Type"),
    text,
    links: text.match(/https?:\/\/[^\s<>"]+/g) ?? [],
  };
}
