import type { Knex } from "knex";
import type { AccountRow } from "../../projections/accounts.js";
import type { HumanRow } from "../../projections/humans.js";
import { normalEmail, type PersonalData } from "../privacy/personal-data.js";
import { revealRow } from "../privacy/reveal.js";
import { isUuid } from "./agents.js";
import { whereStatusAt } from "./transfer-status.js";

/** A human account as the read models show it: the person's side and the account's address and name. */
export type PersonRow = HumanRow & Pick<AccountRow, "email" | "name">;

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

/** A person's row as shown: address and name opened (decisions 6.5). */
async function shown(vault: PersonalData, row: PersonRow | undefined): Promise<PersonRow | undefined> {
  return row && revealRow(vault, row, ["email", "name"]);
}

/**
 * The human account of an address (any letter case), if a person signed up with it: found through
 * the address's person, since the read model holds the address only sealed.
 */
export async function findPersonByEmail(
  db: Knex,
  vault: PersonalData,
  email: string,
): Promise<PersonRow | undefined> {
  const personId = await vault.findPerson(email);
  if (!personId) return undefined;
  return shown(
    vault,
    await people(db).where("accounts.person_id", personId).whereNull("accounts.erased_at").first(),
  );
}

export async function findPerson(
  db: Knex,
  vault: PersonalData,
  accountId: string,
): Promise<PersonRow | undefined> {
  if (!isUuid(accountId)) return undefined;
  return shown(vault, await people(db).where("humans.account_id", accountId).first());
}

/** A person's address and the person it belongs to (decisions 6.5), as transfers name them. */
export interface Addressee {
  personId: string | null;
  email: string;
}

/** The verified person of an account, as transfers held for them name them; null for anyone else. */
export async function verifiedAddressee(
  db: Knex,
  vault: PersonalData,
  accountId: string,
): Promise<Addressee | null> {
  const email = await verifiedPersonEmail(db, vault, accountId);
  return email === null ? null : { personId: await vault.findPerson(email), email };
}

/** Whether a transfer row is addressed to this person. */
export function addressedTo(
  row: { recipient: string; recipient_person_id: string | null },
  to: Addressee,
): boolean {
  if (row.recipient_person_id !== null) return row.recipient_person_id === to.personId;
  return row.recipient.toLowerCase() === normalEmail(to.email);
}

/**
 * Transfers addressed to a person: sealed under their person (decisions 6.5), or, written before
 * sealing, their address in clear.
 */
export function toPerson(personId: string | null, email: string) {
  return (where: Knex.QueryBuilder) => {
    if (personId) where.where("recipient_person_id", personId);
    where.orWhere((legacy) =>
      legacy.whereNull("recipient_person_id").whereRaw("lower(recipient) = ?", [normalEmail(email)]),
    );
  };
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
export async function transfersHeldFor(
  db: Knex,
  vault: PersonalData,
  email: string,
  now: Date,
): Promise<string[]> {
  const held = db("transfers")
    .select("id")
    .where({ mode: "agent-to-human" })
    .where(toPerson(await vault.findPerson(email), email));
  const rows = await whereStatusAt(held, ["pending_recipient"], now).orderBy("created_position");
  return rows.map((row: { id: string }) => row.id);
}

/** Held transfers whose person has a receiving key by now: what an activation missed (the housekeeper's). */
export async function heldTransfersNowReceivable(
  db: Knex,
  now: Date,
  limit: number,
): Promise<{ id: string; account_id: string }[]> {
  const held = db("transfers")
    .join("accounts", "accounts.person_id", "transfers.recipient_person_id")
    .join("humans", "humans.account_id", "accounts.id")
    .select("transfers.id", "accounts.id as account_id")
    .where({ "transfers.mode": "agent-to-human" })
    .whereNotNull("humans.receiving_key")
    .whereNull("accounts.erased_at");
  return whereStatusAt(held, ["pending_recipient"], now).limit(limit);
}

/** Whether an account has ever sent to this address (decisions 4.5: then it may resolve the person). */
export async function hasSentToPerson(
  db: Knex,
  vault: PersonalData,
  senderAccountId: string,
  email: string,
): Promise<boolean> {
  const row = await db("transfers")
    .select("id")
    .where({ sender_account_id: senderAccountId, mode: "agent-to-human" })
    .where(toPerson(await vault.findPerson(email), email))
    .first();
  return row !== undefined;
}

/** The accounts that have sent to this address (decisions 4.6: a person may answer their agents). */
export function accountsThatSentTo(db: Knex, personId: string | null, email: string): Knex.QueryBuilder {
  return db("transfers")
    .distinct("sender_account_id as account_id")
    .where({ mode: "agent-to-human" })
    .where(toPerson(personId, email));
}

/** The address of a verified person's account, or null for an agent account (or an unverified one). */
export async function verifiedPersonEmail(
  db: Knex,
  vault: PersonalData,
  accountId: string,
): Promise<string | null> {
  const person = await findPerson(db, vault, accountId);
  return person?.email_verified ? person.email : null;
}
