import type { Knex } from "knex";
import type { ReceivingKey } from "../../domain/human.js";
import { isUuid } from "./agents.js";

/** A human account as the read models show it. */
export interface PersonRow {
  account_id: string;
  email: string;
  name: string;
  email_verified: boolean;
  receiving_key: ReceivingKey | null;
}

const people = (db: Knex) =>
  db("humans")
    .join("accounts", "accounts.id", "humans.account_id")
    .select(
      "humans.account_id",
      "accounts.email",
      "accounts.name",
      "humans.email_verified",
      "humans.receiving_key",
    );

/** The human account of an address (any letter case), if a person signed up with it. */
export async function findPersonByEmail(db: Knex, email: string): Promise<PersonRow | undefined> {
  return people(db).whereRaw("lower(accounts.email) = lower(?)", [email]).first();
}

export async function findPerson(db: Knex, accountId: string): Promise<PersonRow | undefined> {
  if (!isUuid(accountId)) return undefined;
  return people(db).where("humans.account_id", accountId).first();
}

/** The account of a session that is open at `now`, or null. */
export async function openSessionAccount(db: Knex, sessionId: string, now: Date): Promise<string | null> {
  const row = await db("sessions")
    .where({ id: sessionId })
    .whereNull("ended_at")
    .where("expires_at", ">", now)
    .first<{ account_id: string } | undefined>();
  return row?.account_id ?? null;
}

/** Transfers held for an address, waiting for its person's receiving key (live ones only). */
export async function transfersHeldFor(db: Knex, email: string, now: Date): Promise<string[]> {
  const rows = await db("transfers")
    .select("id")
    .where({ mode: "agent-to-human", status: "pending_recipient" })
    .whereRaw("lower(recipient) = lower(?)", [email])
    .where("expires_at", ">", now)
    .orderBy("created_position");
  return rows.map((row: { id: string }) => row.id);
}

/** Held transfers whose person has a receiving key by now: what an activation missed (the housekeeper's). */
export async function heldTransfersNowReceivable(
  db: Knex,
  now: Date,
  limit: number,
): Promise<{ id: string; account_id: string }[]> {
  return db("transfers")
    .joinRaw("join accounts on lower(accounts.email) = lower(transfers.recipient)")
    .join("humans", "humans.account_id", "accounts.id")
    .select("transfers.id", "accounts.id as account_id")
    .where({ "transfers.mode": "agent-to-human", "transfers.status": "pending_recipient" })
    .whereNotNull("humans.receiving_key")
    .where("transfers.expires_at", ">", now)
    .limit(limit);
}

/** Whether an account has ever sent to this address (decisions 4.5: then it may resolve the person). */
export async function hasSentToPerson(db: Knex, senderAccountId: string, email: string): Promise<boolean> {
  const row = await db("transfers")
    .select("id")
    .where({ sender_account_id: senderAccountId, mode: "agent-to-human" })
    .whereRaw("lower(recipient) = lower(?)", [email])
    .first();
  return row !== undefined;
}

/** The accounts that have sent to this address (decisions 4.6: a person may answer their agents). */
export function accountsThatSentTo(db: Knex, email: string): Knex.QueryBuilder {
  return db("transfers")
    .distinct("sender_account_id as account_id")
    .where({ mode: "agent-to-human" })
    .whereRaw("lower(recipient) = lower(?)", [email]);
}

/** The address of a verified person's account, or null for an agent account (or an unverified one). */
export async function verifiedPersonEmail(db: Knex, accountId: string): Promise<string | null> {
  const person = await findPerson(db, accountId);
  return person?.email_verified ? person.email : null;
}
