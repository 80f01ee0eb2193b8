import type { Knex } from "knex";
import type { AccountRow } from "../../projections/accounts.js";
import type { ApiKeyRow } from "../../projections/api-keys.js";
import { normalEmail, type PersonalData } from "../privacy/personal-data.js";
import { revealRow } from "../privacy/reveal.js";
import { isUuid } from "./agents.js";

export type { AccountRow, ApiKeyRow };

/** An account as shown: its e-mail address and name opened, or "[erased]". */
export async function findAccount(
  db: Knex,
  people: PersonalData,
  id: string,
): Promise<AccountRow | undefined> {
  if (!isUuid(id)) return undefined;
  const row = await db<AccountRow>("accounts").where({ id }).first();
  return row && revealRow(people, row, ["email", "name"]);
}

/**
 * A live account by its e-mail address (any letter case): through the address's person (sealed
 * since decisions 6.5), or its address in clear for accounts made before. Erased ones are gone.
 */
export async function findAccountByEmail(
  db: Knex,
  people: PersonalData,
  email: string,
): Promise<AccountRow | undefined> {
  const personId = await people.findPerson(email);
  const row = await db<AccountRow>("accounts")
    .whereNull("erased_at")
    .where((where) => {
      if (personId) where.where("person_id", personId);
      where.orWhere((legacy) =>
        legacy.whereNull("person_id").whereRaw("lower(email) = ?", [normalEmail(email)]),
      );
    })
    .first();
  return row && revealRow(people, row, ["email", "name"]);
}

/** An API key as shown: never its digest. */
export type ApiKeyShown = Omit<ApiKeyRow, "key_hash">;

export async function findApiKey(db: Knex, id: string): Promise<ApiKeyShown | undefined> {
  if (!isUuid(id)) return undefined;
  return db<ApiKeyRow>("api_keys")
    .select("id", "account_id", "name", "created_at", "revoked_at")
    .where({ id })
    .first();
}

/** The account's keys still in use, oldest first (revoked ones stay in the history only). */
export async function listApiKeys(db: Knex, accountId: string): Promise<ApiKeyShown[]> {
  return db<ApiKeyRow>("api_keys")
    .select("id", "account_id", "name", "created_at", "revoked_at")
    .where({ account_id: accountId })
    .whereNull("revoked_at")
    .orderBy([{ column: "created_at" }, { column: "id" }]);
}
