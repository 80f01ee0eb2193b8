import canonicalize from "canonicalize";
import { type Hash, leafHash } from "./merkle.js";

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

/** The leaf's bytes: UTF-8 of the entry's RFC 8785 (JCS) canonical JSON. */
export function entryBytes(entry: LogEntry): Uint8Array {
  return new TextEncoder().encode(canonicalJson(entry));
}

export function entryLeafHash(entry: LogEntry): Hash {
  return leafHash(entryBytes(entry));
}

/** RFC 8785 canonical JSON of any JSON value: what receipts and leaves are signed and hashed as. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError("not a JSON value");
  return text;
}
