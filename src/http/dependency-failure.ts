/**
 * Failures that are not the request's fault nor a bug: a dependency (the database, the event
 * store, the blob store) is away, or the disk the blobs go to is full. They answer 503 or 507
 * instead of 500, and the service recovers on its own once the dependency is back.
 */
export type DependencyFailure = { kind: "unavailable"; dependency: string } | { kind: "full" };

/** Node's errors of a connection that cannot be made or was lost. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** A disk (or quota) that takes no more bytes; 53100 is PostgreSQL's disk_full. */
const FULL_CODES = new Set(["ENOSPC", "EDQUOT", "53100"]);

/** Storage that cannot be written at all (remounted read-only, a failing device). */
const STORAGE_CODES = new Set(["EROFS", "EIO", "ESTALE"]);

/**
 * PostgreSQL's SQLSTATEs of a server that is not there for now: class 08 (connection exception),
 * 53300 (too many connections) and 57P01–57P03 (shutting down, crashed, starting up).
 */
const isUnavailableSqlState = (state: string) => state.startsWith("08") || /^(53300|57P0[123])$/.test(state);

/**
 * What node-postgres and knex say, without a code, when the connection went away mid-query (knex
 * puts the query before the message: "select … - Connection terminated unexpectedly").
 */
const LOST_CONNECTION =
  /(^| - )(Connection terminated|Client has encountered a connection error|Knex: Timeout acquiring a connection|the database thread exited|Client was closed)/;

interface ErrorLike {
  name?: string;
  code?: string;
  message?: string;
  cause?: unknown;
  errors?: unknown[];
  $metadata?: { httpStatusCode?: number };
}

/** The dependency failure `error` stands for (looking through its causes), or null for any other error. */
export function dependencyFailure(error: unknown, seen = new Set<unknown>()): DependencyFailure | null {
  if (!error || typeof error !== "object" || seen.has(error)) return null;
  seen.add(error);
  const e = error as ErrorLike;
  const code = typeof e.code === "string" ? e.code : "";
  if (FULL_CODES.has(code)) return { kind: "full" };
  if (STORAGE_CODES.has(code)) return { kind: "unavailable", dependency: "blob storage" };
  if (code.length === 5 && isUnavailableSqlState(code))
    return { kind: "unavailable", dependency: "the database" };
  if (LOST_CONNECTION.test(e.message ?? "") || e.name === "KnexTimeoutError")
    return { kind: "unavailable", dependency: "the database" };
  const s3Status = e.$metadata?.httpStatusCode;
  if (s3Status !== undefined && (s3Status >= 500 || s3Status === 0))
    return { kind: "unavailable", dependency: "blob storage" };
  if (e.name === "UnavailableError" || e.name === "DeadlineExceededError")
    return { kind: "unavailable", dependency: "the event store" };
  if (NETWORK_CODES.has(code)) return { kind: "unavailable", dependency: "a storage service" };
  for (const inner of [e.cause, ...(Array.isArray(e.errors) ? e.errors : [])]) {
    const found = dependencyFailure(inner, seen);
    if (found) return found;
  }
  return null;
}

/** Seconds a client is asked to wait before trying again after a 503. */
export const RETRY_AFTER_SECONDS = 5;
