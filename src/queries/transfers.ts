import type { Knex } from "knex";
import type { TransferStatus } from "../../domain/transfer.js";
import type { TransferRow } from "../../projections/transfers.js";
import { type Addressee, addressedTo, toPerson } from "./humans.js";
import { whereOverdue, whereStatusAt } from "./transfer-status.js";

export type { TransferRow };

const TRANSFER_ID = /^tr_[0-9A-Za-z]{24}$/;

/** Ids this service gives out; anything else cannot name a transfer. */
export const isTransferId = (id: string) => TRANSFER_ID.test(id);

/** Whether a transfer is held for this verified person, before any account is its recipient. */
const heldForPerson = (row: TransferRow, person: Addressee | null) =>
  person !== null &&
  row.mode === "agent-to-human" &&
  row.recipient_account_id === null &&
  addressedTo(row, person);

/**
 * A transfer the caller's account may see (sender or recipient side, or held for the caller's
 * verified address, `personEmail`); anything else is "not found".
 */
export async function findVisibleTransfer(
  db: Knex,
  id: string,
  accountId: string,
  person: Addressee | null = null,
): Promise<TransferRow | undefined> {
  if (!isTransferId(id)) return undefined;
  const row = await db<TransferRow>("transfers").where({ id }).first();
  if (!row || row.status === "deleted") return undefined;
  const visible =
    row.sender_account_id === accountId ||
    row.recipient_account_id === accountId ||
    heldForPerson(row, person);
  return visible ? row : undefined;
}

/** Received by the account, or held for its verified person's address (decisions 4.7). */
function received(q: Knex.QueryBuilder, accountId: string, person: Addressee | null) {
  q.where({ recipient_account_id: accountId });
  if (person) {
    q.orWhere((held) =>
      held
        .whereNull("recipient_account_id")
        .where({ mode: "agent-to-human" })
        .where(toPerson(person.personId, person.email)),
    );
  }
  return q;
}

export async function findTransfer(db: Knex, id: string): Promise<TransferRow | undefined> {
  if (!isTransferId(id)) return undefined;
  return db<TransferRow>("transfers").where({ id }).first();
}

export interface TransferListQuery {
  accountId: string;
  /** The caller's verified person when it is a person's account: what is held for them is theirs to see. */
  person: Addressee | null;
  direction: "sent" | "received" | null;
  /** The status at `now` (statusAt): a live transfer past its expiry is stored as live but reads as expired. */
  status: TransferStatus | null;
  now: Date;
  limit: number;
  offset: number;
}

/** Transfers of an account, newest first, with the status filter applied in SQL (transfer-status.ts). */
export async function listTransfers(
  db: Knex,
  q: TransferListQuery,
): Promise<{ rows: TransferRow[]; total: number }> {
  const base = db<TransferRow>("transfers").whereNot({ status: "deleted" });
  if (q.direction === "sent") base.where({ sender_account_id: q.accountId });
  else if (q.direction === "received") base.where((w) => received(w, q.accountId, q.person));
  else
    base.where((w) =>
      w.where({ sender_account_id: q.accountId }).orWhere((r) => received(r, q.accountId, q.person)),
    );
  if (q.status) whereStatusAt(base, [q.status], q.now);
  const [{ count }] = (await base.clone().count({ count: "*" })) as [{ count: string | number }];
  const rows = await base.orderBy("created_position", "desc").limit(q.limit).offset(q.offset);
  return { rows, total: Number(count) };
}

export interface InboxQuery {
  accountId: string;
  /** The recipient agent (UUID), or null for every agent of the account. */
  agentId: string | null;
  after: string | null;
  now: Date;
  limit: number;
}

/** Incoming pending and active transfers, oldest first, after a cursor position. */
export async function inboxPage(db: Knex, q: InboxQuery): Promise<TransferRow[]> {
  const query = db<TransferRow>("transfers").where({ recipient_account_id: q.accountId });
  whereStatusAt(query, ["pending", "active"], q.now);
  if (q.agentId) query.where({ recipient_agent_id: q.agentId });
  if (q.after) query.where("inbox_position", ">", q.after);
  return query.orderBy("inbox_position").limit(q.limit);
}

/**
 * Live transfers whose expiry has come (whereOverdue), the longest overdue first: the housekeeper
 * records them. Ordered by the index's column so that the planner walks transfers_live_by_expiry and
 * stops at `limit`, whatever it guesses of how many are due (docs/operations.md, "Cost at size").
 */
export async function dueForExpiry(db: Knex, now: Date, limit: number): Promise<string[]> {
  const rows = await whereOverdue(db("transfers").select("id"), now).orderBy("expires_at").limit(limit);
  return rows.map((row: { id: string }) => row.id);
}

/** An account's sent transfers still live by status though their expiry has come. */
export async function overdueTransfersOf(db: Knex, accountId: string, now: Date): Promise<string[]> {
  const rows = await whereOverdue(db("transfers").select("id").where({ sender_account_id: accountId }), now);
  return rows.map((row: { id: string }) => row.id);
}

/**
 * Transfers whose file data should be gone by now, the longest due first. Ordered by the index's
 * column: unordered, the planner scanned the whole table at 150,000 transfers whenever it guessed
 * that many were due (docs/operations.md, "Cost at size").
 */
export async function dueForPurge(
  db: Knex,
  now: Date,
  limit: number,
): Promise<Pick<TransferRow, "id" | "files">[]> {
  return db<TransferRow>("transfers")
    .select("id", "files")
    .where({ files_deleted: false })
    .where("purge_after", "<=", now)
    .orderBy("purge_after")
    .limit(limit);
}

/** A transfer the account sent or received (decisions 3.3: its history outlives it), else undefined. */
export async function findPartyTransfer(
  db: Knex,
  id: string,
  accountId: string,
): Promise<TransferRow | undefined> {
  const transfer = await findTransfer(db, id);
  const party = transfer?.sender_account_id === accountId || transfer?.recipient_account_id === accountId;
  return party ? transfer : undefined;
}
