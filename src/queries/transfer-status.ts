import type { Knex } from "knex";
import { EXPIRING_STATUSES, type TransferStatus } from "../../domain/transfer.js";

/**
 * The SQL form of `statusAt` (domain/transfer.ts), the one rule of a transfer's status at a time:
 * from `expires_at` on, a transfer stored as one of EXPIRING_STATUSES reads as expired, whether or
 * not the housekeeper has recorded its expiry yet. Every query that selects transfers by status
 * goes through here; test/queries/transfer-status.test.ts checks these clauses against the
 * function on the boundary (stored status × `expires_at` just before, at and after `now`).
 *
 * `table`: the transfers table's name or alias in the query (a join names its columns).
 */

const column = (table: string, name: string) => `${table}.${name}`;

/** Transfers whose status at `now` is one of `statuses`. */
export function whereStatusAt<Query extends Knex.QueryBuilder>(
  query: Query,
  statuses: readonly TransferStatus[],
  now: Date,
  table = "transfers",
): Query {
  const status = column(table, "status");
  const expiresAt = column(table, "expires_at");
  const live = statuses.filter((s) => EXPIRING_STATUSES.includes(s));
  const lasting = statuses.filter((s) => s !== "expired" && !EXPIRING_STATUSES.includes(s));
  query.where((any) => {
    // Stored live, and its time not yet up.
    if (live.length > 0) any.orWhere((w) => w.whereIn(status, live).where(expiresAt, ">", now));
    // A status time does not change (deleted).
    if (lasting.length > 0) any.orWhereIn(status, lasting);
    // Recorded as expired, or stored live with its time up.
    if (statuses.includes("expired")) {
      any.orWhere(status, "expired").orWhere((w) => whereOverdue(w, now, table));
    }
    // Nothing asked for: nothing matches.
    if (statuses.length === 0) any.whereRaw("false");
  });
  return query;
}

/**
 * Transfers whose status at `now` is expired while the stored one is still live: the expiries the
 * housekeeper (or a sender that needs the storage) has yet to record. Written as the partial
 * indexes on live transfers are (`status in (...)`), so they serve it.
 */
export function whereOverdue<Query extends Knex.QueryBuilder>(
  query: Query,
  now: Date,
  table = "transfers",
): Query {
  query.whereIn(column(table, "status"), EXPIRING_STATUSES).where(column(table, "expires_at"), "<=", now);
  return query;
}
