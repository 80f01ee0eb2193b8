import { type Hash, textLeafHash } from "./merkle.js";

/**
 * A leaf of the log (decisions 9.1): one event as the log keeps it. `data` is exactly as stored,
 * personal data sealed (6.5), so an erasure never changes a leaf.
 */
export interface LogEntry {
  position: string;
  type: string;
  stream: string;
  at: string;
  data: Record<string, unknown>;
}

const encoder = new TextEncoder();

/** The leaf's bytes: UTF-8 of the entry's RFC 8785 (JCS) canonical JSON. */
export function entryBytes(entry: LogEntry): Uint8Array {
  return encoder.encode(canonicalJson(entry));
}

export function entryLeafHash(entry: LogEntry): Hash {
  return textLeafHash(canonicalJson(entry));
}

/**
 * RFC 8785 canonical JSON of a JSON value: what leaves and receipts are hashed and signed as.
 * RFC 8785 defines strings and numbers as ECMAScript's JSON.stringify writes them, and object keys
 * sorted by UTF-16 code units, as Array.prototype.sort compares them; what is left is this walk.
 * Written here rather than taken from a library because `handoff log check` canonicalizes every
 * event of the log: the `canonicalize` package took 15 µs for a 1 KB entry, this some 5. That
 * package stays the oracle of the property test (packages/sdk/test/transparency/entry.test.ts).
 */
export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case "string":
      return canonicalString(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`${value} has no canonical JSON`);
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "object":
      if (value === null) return "null";
      return Array.isArray(value) ? canonicalArray(value) : canonicalObject(value as Record<string, unknown>);
    default:
      throw new TypeError(`a ${typeof value} has no JSON`);
  }
}

function canonicalString(value: string): string {
  if (!(value as string & { isWellFormed(): boolean }).isWellFormed()) {
    throw new TypeError("a lone surrogate has no canonical JSON");
  }
  return JSON.stringify(value);
}

function canonicalArray(items: unknown[]): string {
  let text = "[";
  for (let i = 0; i < items.length; i++) text += (i > 0 ? "," : "") + canonicalJson(items[i] ?? null);
  return `${text}]`;
}

function canonicalObject(object: Record<string, unknown>): string {
  if (typeof object.toJSON === "function") return canonicalJson(object.toJSON());
  const keys = Object.keys(object).sort();
  let text = "{";
  for (const key of keys) {
    const member = object[key];
    if (member === undefined) continue;
    text += `${text.length > 1 ? "," : ""}${canonicalString(key)}:${canonicalJson(member)}`;
  }
  return `${text}}`;
}
