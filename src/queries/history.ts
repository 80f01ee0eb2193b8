import type { Knex } from "knex";
import { personalFields } from "../../domain/personal-data.js";
import type { HistoryEntryRow } from "../../projections/history.js";
import type { PersonalData } from "../privacy/personal-data.js";

/** A history entry as the queries read it (the history projection writes them). */
export type HistoryRow = HistoryEntryRow;

/** `account:<id>`, `agent:<id>` or `transfer:<id>`: what the history projection indexes entries by. */
export type HistorySubject = `${"account" | "agent" | "transfer"}:${string}`;

export interface HistoryFilter {
  /** Strictly after this position. */
  after?: string | null;
  /** From this time on (inclusive). */
  from?: string | null;
  /** Before this time (exclusive). */
  to?: string | null;
  types?: string[];
  /** At or before this position. */
  until?: string | null;
  limit?: number;
}

/** The entries of one subject in log order, filtered. */
export async function historyOf(
  db: Knex,
  subject: HistorySubject,
  filter: HistoryFilter = {},
): Promise<HistoryRow[]> {
  const query = db("history_index as i")
    .join("history_entries as e", "e.position", "i.position")
    .where("i.subject", subject)
    .orderBy("i.position")
    .select<HistoryRow[]>("e.position", "e.stream_id", "e.type", "e.at", "e.actor", "e.data");
  if (filter.after) query.where("i.position", ">", filter.after);
  if (filter.until) query.where("i.position", "<=", filter.until);
  if (filter.from) query.where("e.at", ">=", filter.from);
  if (filter.to) query.where("e.at", "<", filter.to);
  if (filter.types && filter.types.length > 0) query.whereIn("e.type", filter.types);
  if (filter.limit !== undefined) query.limit(filter.limit);
  return query;
}

/** The TransferCreated entries of these transfer streams, by stream. */
export async function transferCreations(db: Knex, streamIds: string[]): Promise<Map<string, HistoryRow>> {
  if (streamIds.length === 0) return new Map();
  const rows = await db("history_entries")
    .whereIn("stream_id", streamIds)
    .where({ type: "TransferCreated" })
    .select<HistoryRow[]>("position", "stream_id", "type", "at", "actor", "data");
  return new Map(rows.map((row) => [row.stream_id, row]));
}

/** Entries as shown (decisions 6.1): personal data opened, or "[erased]". */
export async function presentHistory(people: PersonalData, rows: HistoryRow[]) {
  const places = rows.flatMap((row, index) =>
    personalFields(row.type, row.data)
      .filter((field) => typeof row.data[field] === "string")
      .map((field) => ({ index, field, value: row.data[field] as string })),
  );
  const opened = await people.reveal(places.map((place) => place.value));
  const data = rows.map((row) => ({ ...row.data }));
  places.forEach((place, i) => {
    const entry = data[place.index];
    if (entry) entry[place.field] = opened[i];
  });
  return rows.map((row, index) => ({
    position: row.position,
    type: row.type,
    at: new Date(row.at).toISOString(),
    actor: {
      kind: row.actor.kind,
      account_id: row.actor.account_id,
      agent_id: row.actor.agent_id,
      key_id: row.actor.key_id,
    },
    data: data[index] ?? row.data,
  }));
}

/** Decisions 6.3: whether the event at `position` is of a stream the account owns or takes part in. */
export async function accountSees(db: Knex, accountId: string, position: string): Promise<boolean> {
  const row = await db("history_index")
    .where({ subject: `account:${accountId}`, position })
    .first("position");
  return row !== undefined;
}
